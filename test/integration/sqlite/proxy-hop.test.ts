import net from 'node:net';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { eventually } from '../../support/eventually.js';
import { startHostplane, type TestHostplane, type TestSite } from '../../support/hostplane.js';
import { createDatabase } from '../../support/postgres.js';
import { sqliteApi } from '../../support/sqlite-api.js';

/**
 * A client that leaves a call forwarded to the shard that owns its database cuts the hop at once
 * (src/sqlite/proxy.ts), whether the owner is still running the statement or its answer is
 * streaming back, and the hop is counted as the client's doing, not as the owner's failure.
 */
describe('SQLite proxy hop when the client goes away', () => {
  let databaseUrl: string;
  let a: TestHostplane;
  let b: TestHostplane;
  let site: TestSite;
  let token: string;
  const shard = (name: string) =>
    startHostplane('postgres+s3', {
      env: { DATABASE_URL: databaseUrl, HOSTPLANE_SQLITE_SHARD_NAME: name },
    });
  beforeAll(async () => {
    databaseUrl = await createDatabase(inject('postgresUrl'));
    a = await shard('hop-a');
    b = await shard('hop-b');
    site = await a.createSite('hop-client');
    // Installed through A: A owns the database, so B forwards every call to it.
    token = await sqliteApi(a, site).token({ path: 'hop.sqlite', name: 'hop', requireUserAuth: false });
  });
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
  });

  const hops = (result: string) => metricSum(b, 'hostplane_sqlite_proxy_hops_total', [`result="${result}"`]);

  /** Sends a query to B over a raw socket and hangs up once `leave` says so. */
  const leavingClient = (sql: string, leave: (received: string) => boolean) =>
    new Promise<void>((resolve, reject) => {
      const body = JSON.stringify({ sql });
      const socket = net.connect(b.port, '127.0.0.1');
      let received = '';
      socket.on('error', reject);
      socket.on('close', () => resolve());
      socket.on('data', (chunk: Buffer) => {
        received += chunk.toString('latin1');
        if (leave(received)) socket.destroy();
      });
      socket.write(
        'POST /api/v1/sqlite/query HTTP/1.1\r\nhost: localhost:8080\r\ncontent-type: application/json\r\n' +
          `x-sqlite-token: ${token}\r\norigin: ${sqliteApi(b, site).origin}\r\n` +
          `content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
        () => {
          if (leave(received)) socket.destroy();
        },
      );
    });

  it('cuts the hop when the client leaves while a big answer streams back', async () => {
    const [closedBefore, failedBefore] = [await hops('client_closed'), await hops('error')];
    // About 8 MB of rows, more than the sockets between the client, B and A hold: A is still sending.
    const big =
      'WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 9000) ' +
      'SELECT i, hex(zeroblob(400)) AS pad FROM n';
    const started = Date.now();
    await leavingClient(big, (received) => received.startsWith('HTTP/1.1 200'));
    // Before, the paused answer held A's connection for the hop's 30 s timeout, then counted as an error.
    await eventually(
      'the hop counted as cut by the client',
      async () => (await hops('client_closed')) > closedBefore,
      5_000,
    );
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(await hops('error')).toBe(failedBefore);
  });

  it('counts a client that leaves before the owner answered as client_closed, not a failed hop', async () => {
    const [closedBefore, failedBefore] = [await hops('client_closed'), await hops('error')];
    const slow = 'WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n';
    // Hangs up once the request is written: the hop is then starting or waiting for the slow statement.
    await leavingClient(slow, () => true);
    await eventually(
      'the hop counted as cut by the client',
      async () => (await hops('client_closed')) > closedBefore,
      5_000,
    );
    expect(await hops('error')).toBe(failedBefore);
    // The owner and the hop carry on.
    const viaB = sqliteApi(b, site);
    expect(
      (await viaB.scoped(token, 'POST', '/api/v1/sqlite/query', { sql: 'SELECT 2 AS x' })).body.rows,
    ).toEqual([{ x: 2 }]);
  });
});

/** The sum of a metric's samples whose labels contain every one of `parts`. */
async function metricSum(hp: TestHostplane, name: string, parts: string[]): Promise<number> {
  const text = await (await fetch(`${hp.metricsUrl}/metrics`)).text();
  return text
    .split('\n')
    .filter((line) => line.startsWith(`${name}{`) && parts.every((part) => line.includes(part)))
    .reduce((sum, line) => sum + Number(line.split(' ').pop()), 0);
}
