/**
 * The one rule for a request's `Origin` (spec 5.6: it must *equal* an allowed origin), used by
 * every CORS decision: the SQLite calls and their preflight, and the public form endpoint.
 *
 * Allowed origins are built by `hostOrigin`, in the form a browser serialises an origin
 * (`scheme://host[:port]`, lower-case host, no default port, nothing after it). The header is
 * compared as sent, never normalised: a trailing slash, upper case, a path, userinfo, `blob:`,
 * surrounding spaces or `null` match nothing, and only a header that matched is ever echoed.
 */

/** The serialised origin of `host` served under the public base URL's scheme and port. */
export function hostOrigin(baseUrl: string, host: string): string {
  const base = new URL(baseUrl);
  const port = base.port ? `:${base.port}` : '';
  return `${base.protocol}//${host.toLowerCase()}${port}`;
}

/** The `Origin` header if it equals one of `allowed`, else undefined. */
export function matchedOrigin(origin: string | undefined, allowed: readonly string[]): string | undefined {
  return origin !== undefined && allowed.includes(origin) ? origin : undefined;
}

/**
 * The host of an `Origin` header that is exactly the serialisation `hostOrigin` gives for it
 * (scheme and port of the base URL), else undefined. For a check that must look the host up
 * before it knows the allowed list (a preflight carries no credential).
 */
export function originHost(baseUrl: string, origin: string | undefined): string | undefined {
  if (origin === undefined || origin === 'null') return undefined;
  let hostname: string;
  try {
    hostname = new URL(origin).hostname;
  } catch {
    return undefined;
  }
  return hostname !== '' && hostOrigin(baseUrl, hostname) === origin ? hostname : undefined;
}
