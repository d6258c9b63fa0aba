import {
  ApiException,
  IsomorphicFetchHttpLibrary,
  ResponseContext,
  ServerConfiguration,
  createConfiguration,
  wrapHttpLibrary,
  type Configuration,
  type KubeConfig,
  type PromiseHttpLibrary,
  type RequestContext,
} from '@kubernetes/client-node';

/**
 * How long one Kubernetes API call may take, answer body included, before it fails. client-node
 * has no timeout of its own: a call to an API server that stopped answering would hang a reconcile
 * (and with it controller shutdown) for as long as the TCP connection lives. Watches are not made
 * with these clients: the informer bounds them with its own server-side timeout.
 */
export const DEFAULT_KUBE_REQUEST_TIMEOUT_MS = 15_000;

export interface KubeApiOptions {
  /** Per-call budget; default DEFAULT_KUBE_REQUEST_TIMEOUT_MS. */
  requestTimeoutMs?: number;
}

/** A Kubernetes API call that did not finish within its budget (it has been aborted). */
export class KubeRequestTimeoutError extends Error {
  constructor(
    readonly method: string,
    readonly url: string,
    readonly timeoutMs: number,
  ) {
    super(`${method} ${new URL(url).pathname} did not finish within ${timeoutMs} ms`);
    this.name = 'KubeRequestTimeoutError';
  }
}

/** client-node's fetch transport with a deadline on every call, reading the body included. */
class DeadlineHttpLibrary implements PromiseHttpLibrary {
  private readonly transport = new IsomorphicFetchHttpLibrary();

  constructor(private readonly timeoutMs: number) {}

  async send(request: RequestContext): Promise<ResponseContext> {
    const deadline = AbortSignal.timeout(this.timeoutMs);
    const callerSignal = request.getSignal();
    request.setSignal(callerSignal ? AbortSignal.any([callerSignal, deadline]) : deadline);
    const method = request.getHttpMethod().toString();
    const url = request.getUrl();
    const explain = (err: unknown): never => {
      if (deadline.aborted) throw new KubeRequestTimeoutError(method, url, this.timeoutMs);
      throw err;
    };
    const response = await this.transport.send(request).toPromise().catch(explain);
    const body = response.body;
    return new ResponseContext(response.httpStatusCode, response.headers, {
      text: () => body.text().catch(explain),
      binary: () => body.binary().catch(explain),
    });
  }
}

type ApiConstructor<T> = new (configuration: Configuration) => T;

/**
 * `kubeConfig.makeApiClient(Api)` with the per-call deadline: use it for every Kubernetes API
 * client (CoreV1Api, KubernetesObjectApi, ...) except watches.
 */
export function makeKubeApi<T>(
  kubeConfig: KubeConfig,
  api: ApiConstructor<T>,
  options: KubeApiOptions = {},
): T {
  const cluster = kubeConfig.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig has no current cluster');
  const timeoutMs = options.requestTimeoutMs ?? DEFAULT_KUBE_REQUEST_TIMEOUT_MS;
  if (!(timeoutMs > 0)) throw new Error(`requestTimeoutMs must be positive, got ${timeoutMs}`);
  return new api(
    createConfiguration({
      baseServer: new ServerConfiguration(cluster.server, {}),
      authMethods: { default: kubeConfig },
      httpApi: wrapHttpLibrary(new DeadlineHttpLibrary(timeoutMs)),
    }),
  );
}

/** The HTTP status of a failed Kubernetes API call (undefined for network errors and timeouts). */
export function apiStatus(err: unknown): number | undefined {
  if (err instanceof ApiException) return err.code;
  const code = (err as { code?: unknown; statusCode?: unknown } | null)?.statusCode;
  return typeof code === 'number' ? code : undefined;
}

export const isNotFound = (err: unknown): boolean => apiStatus(err) === 404;
export const isConflict = (err: unknown): boolean => apiStatus(err) === 409;
