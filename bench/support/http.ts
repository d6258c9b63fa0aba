import http from 'node:http';

/**
 * One request to the server under test on 127.0.0.1, answered with its status and body as text.
 * No fetch: node:http lets a bench choose its connection pool (`agent`) and adds little of its own.
 */
export function request(
  port: number,
  method: string,
  pathAndQuery: string,
  headers: Record<string, string>,
  body?: string | Buffer,
  agent?: http.Agent,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, method, path: pathAndQuery, headers, agent },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
