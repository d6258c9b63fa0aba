import net from 'node:net';
import { sql } from 'drizzle-orm';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it, onTestFinished } from 'vitest';
import { openStore, type Store } from '../../../src/store/index.js';
import { eventually } from '../../support/eventually.js';
import { createDatabase } from '../../support/postgres.js';

// Issue 16, item 13 (review): a LISTEN connection that dies while its LISTEN is in flight makes pg
// both reject the query and emit 'error'. Both used to schedule a resubscription, so two retry
// chains ran and each ended holding a LISTEN connection; stop() released only the last one.
// Real PostgreSQL behind a small TCP proxy that cuts a connection as it sends LISTEN.

/** Forwards to PostgreSQL; while `cutListens` > 0, a connection that sends LISTEN is cut. */
async function startCuttingProxy(target: URL) {
  const [host, targetPort] = [target.hostname, Number(target.port)];
  const state = { cutListens: 0, cut: 0 };
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(targetPort, host);
    sockets.add(client).add(upstream);
    const close = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', close).on('close', close);
    upstream.on('error', close).on('close', close);
    client.on('data', (chunk: Buffer) => {
      if (state.cutListens > 0 && chunk.includes('LISTEN')) {
        state.cutListens--;
        state.cut++;
        close();
        return;
      }
      upstream.write(chunk);
    });
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    state,
    port,
    async stop() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe('LISTEN reconnection', () => {
  const channels = ['ch_one', 'ch_two', 'ch_three'];
  let proxy: Awaited<ReturnType<typeof startCuttingProxy>>;
  let admin: pg.Client;
  let dbName: string;
  let store: Store | undefined;

  beforeAll(async () => {
    const url = new URL(await createDatabase(inject('postgresUrl')));
    dbName = url.pathname.slice(1);
    admin = new pg.Client({ connectionString: url.toString() });
    await admin.connect();
    proxy = await startCuttingProxy(url);
    url.host = `127.0.0.1:${proxy.port}`;
    store = await openStore({ databaseUrl: url.toString() });
  });
  afterAll(async () => {
    await store?.close();
    await admin?.end();
    await proxy?.stop();
  });

  /** The backends whose last statement was a LISTEN, i.e. the store's listening connections. */
  const listening = async () =>
    Number(
      (
        await admin.query<{ n: string }>(
          `select count(*) as n from pg_stat_activity
            where datname = $1 and query like 'LISTEN%' and pid <> pg_backend_pid()`,
          [dbName],
        )
      ).rows[0]!.n,
    );

  it('keeps exactly one connection per channel through losses mid-LISTEN, and none after stop()', async () => {
    const received = new Map<string, string[]>(channels.map((c) => [c, []]));
    const stops = await Promise.all(
      channels.map((channel) => store!.listen(channel, (payload) => received.get(channel)!.push(payload))),
    );
    await eventually('one LISTEN connection per channel', async () => (await listening()) === 3);
    // A second retry chain shows as a fourth connection for a while (until its holder is killed).
    let most = 0;
    const sampler = setInterval(() => {
      listening().then(
        (n) => (most = Math.max(most, n)),
        () => undefined,
      );
    }, 50);
    onTestFinished(() => clearInterval(sampler));

    for (let round = 1; round <= 3; round++) {
      // The next LISTEN of each channel is cut while in flight; then every listener is killed.
      proxy.state.cutListens = channels.length;
      await admin.query(
        `select pg_terminate_backend(pid) from pg_stat_activity
          where datname = $1 and query like 'LISTEN%' and pid <> pg_backend_pid()`,
        [dbName],
      );
      await eventually(`round ${round}: every channel subscribed again`, async () => {
        const payload = `round-${round}`;
        await store!.db.execute(
          sql`select pg_notify('ch_one', ${payload}), pg_notify('ch_two', ${payload}), pg_notify('ch_three', ${payload})`,
        );
        return channels.every((c) => received.get(c)!.includes(payload));
      });
      expect(proxy.state.cutListens).toBe(0);
    }
    expect(proxy.state.cut).toBe(9);
    clearInterval(sampler);
    expect(most).toBe(3);
    await eventually(
      'exactly one LISTEN connection per channel',
      async () => (await listening()) === 3,
      5_000,
    );

    await Promise.all(stops.map((stop) => stop()));
    await eventually('no LISTEN connection after stop()', async () => (await listening()) === 0, 5_000);
  });
});
