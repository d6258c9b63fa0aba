import { createHash } from 'node:crypto';
import { rawRequest } from './hostplane.js';

export const sha256 = (content: string | Buffer) => createHash('sha256').update(content).digest('hex');

/** A multipart body of file parts, each named `name` (a blob's hash) with `bytes` as its content. */
export function multipart(parts: Array<[name: string, bytes: string | Buffer]>): {
  body: Buffer;
  contentType: string;
} {
  const boundary = `----hostplane-test-${Math.random().toString(36).slice(2)}`;
  const pieces: Buffer[] = [];
  for (const [name, bytes] of parts) {
    pieces.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="${name}"; filename="${name.slice(0, 16)}"\r\n` +
          'Content-Type: application/octet-stream\r\n\r\n',
      ),
      typeof bytes === 'string' ? Buffer.from(bytes) : bytes,
      Buffer.from('\r\n'),
    );
  }
  pieces.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(pieces), contentType: `multipart/form-data; boundary=${boundary}` };
}

export interface DeployClient {
  /** A call with the site's key; JSON answer (`{text}` when not JSON). */
  call(
    method: string,
    pathAndQuery: string,
    body?: unknown,
  ): Promise<{ status: number; body: Record<string, unknown> }>;
  create(files: Record<string, string>, draft?: boolean): Promise<{ id: string; required: string[] }>;
  put(
    id: string,
    hash: string,
    bytes: string | Buffer,
  ): Promise<{ status: number; body: Record<string, unknown> }>;
  /** POST /api/v1/deploys/{id}/files with these parts (name → bytes). */
  bulk(
    id: string,
    parts: Array<[name: string, bytes: string | Buffer]>,
  ): Promise<{ status: number; body: Record<string, unknown> }>;
  /** Creates, uploads what is required, finalizes; returns the deploy id. */
  deploy(contents: Record<string, string>, draft?: boolean): Promise<string>;
}

/** The deploy API of the server on `port`, with `apiKey`. */
export function deployClient(port: number, apiKey: string): DeployClient {
  const call: DeployClient['call'] = async (method, pathAndQuery, body) => {
    const res = await rawRequest(port, pathAndQuery, {
      method,
      headers: {
        host: 'localhost:8080',
        'x-api-key': apiKey,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    try {
      return { status: res.status, body: JSON.parse(text) as Record<string, unknown> };
    } catch {
      return { status: res.status, body: { text } };
    }
  };
  const put: DeployClient['put'] = async (id, hash, bytes) => {
    const res = await rawRequest(port, `/api/v1/deploys/${id}/files/${hash}`, {
      method: 'PUT',
      headers: { host: 'localhost:8080', 'x-api-key': apiKey, 'content-type': 'application/octet-stream' },
      body: typeof bytes === 'string' ? Buffer.from(bytes) : bytes,
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const create: DeployClient['create'] = async (files, draft) => {
    const res = await call('POST', '/api/v1/deploys', { files, ...(draft ? { draft } : {}) });
    if (res.status !== 200) throw new Error(`create → ${res.status} ${JSON.stringify(res.body)}`);
    return { id: res.body.id as string, required: res.body.required as string[] };
  };
  const bulk: DeployClient['bulk'] = async (id, parts) => {
    const { body, contentType } = multipart(parts);
    const res = await rawRequest(port, `/api/v1/deploys/${id}/files`, {
      method: 'POST',
      headers: {
        host: 'localhost:8080',
        'x-api-key': apiKey,
        'content-type': contentType,
        'content-length': String(body.length),
      },
      body,
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  return {
    call,
    create,
    put,
    bulk,
    async deploy(contents, draft) {
      const files = Object.fromEntries(Object.entries(contents).map(([p, c]) => [p, sha256(c)]));
      const { id, required } = await create(files, draft);
      const byHash = new Map(Object.values(contents).map((c) => [sha256(c), c]));
      for (const hash of required) {
        const res = await put(id, hash, byHash.get(hash)!);
        if (res.status !== 200) throw new Error(`put → ${res.status} ${JSON.stringify(res.body)}`);
      }
      const done = await call('POST', `/api/v1/deploys/${id}/finalize`);
      if (done.status !== 200) throw new Error(`finalize → ${done.status} ${JSON.stringify(done.body)}`);
      return id;
    },
  };
}
