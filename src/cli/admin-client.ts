import { readFile } from 'node:fs/promises';
import http from 'node:http';
import { adminSecretPath, adminSocketPath } from '../server/index.js';

/** Sends an admin command to the running server (its admin socket); undefined when no server is listening. */
export async function callAdminSocket(
  dataDir: string,
  command: 'create-site' | 'invite' | 'session' | 'drain-shard',
  body: unknown,
): Promise<{ status: number; body: Record<string, unknown> } | undefined> {
  const secret = await readFile(adminSecretPath(dataDir), 'utf8').catch(() => undefined);
  if (!secret) return undefined;
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        socketPath: adminSocketPath(dataDir),
        path: `/${command}`,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-admin-secret': secret.trim() },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 500,
            body: JSON.parse(Buffer.concat(chunks).toString('utf8')),
          }),
        );
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT' || err.code === 'ECONNREFUSED') resolve(undefined);
      else reject(err);
    });
    req.end(JSON.stringify(body));
  });
}
