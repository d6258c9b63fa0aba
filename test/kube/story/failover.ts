/**
 * A shard lost for good on the real node: under a steady write load the StatefulSet is scaled
 * down, so its highest ordinal stops (gracefully, as a node drain or scale-down stops it) and does
 * not return; its databases are placed on the other shard and restored there from MinIO. Measured:
 * RTO (first failed write to first acknowledged one after it, and from the scale-down) and RPO
 * (acknowledged writes missing afterwards).
 */
import { expect } from 'vitest';
import { eventually } from '../../support/eventually.js';
import { MINUTES, NS, RELEASE, seconds, type Story } from './context.js';
import { alertResolved, alertWas, firstNonZeroAfterMs, watchAlert } from './monitoring.js';

const LOST = `${RELEASE}-sqlite-1`;
const KEPT = `${RELEASE}-sqlite-0`;
/** One write per database this often (a steady load, light enough for the shared machine). */
const WRITE_EVERY_MS = 100;

interface Writer {
  path: string;
  token: string;
  acked: number[];
  failures: { at: number; status: number }[];
  successes: number[];
}

/** Writes rows 1, 2, 3, … to one database until `stop`, recording what was acknowledged and when. */
async function writeLoop(story: Story, writer: Writer, stop: { now: boolean }): Promise<void> {
  for (let n = 1; !stop.now; n++) {
    const started = Date.now();
    const res = await story
      .sqlite('exec', 'INSERT INTO load (n) VALUES (?)', [n], writer.token)
      .catch(() => ({ res: { status: 0 } }));
    if (res.res.status === 200) {
      writer.acked.push(n);
      writer.successes.push(Date.now());
    } else writer.failures.push({ at: Date.now(), status: res.res.status });
    const wait = WRITE_EVERY_MS - (Date.now() - started);
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
  }
}

export interface FailoverMeasurement {
  databases: string[];
  rtoMs: number;
  rtoFromLossMs: number;
  acked: number;
  lost: number;
  alertFiringAfterMs: number;
  alertResolvedAfterMs: number;
}

export async function loseShardForGood(story: Story): Promise<FailoverMeasurement> {
  const prometheus = story.prometheus!;
  // Two more databases: placed on the least-loaded shard at their first call, so at least one of
  // the three (with the story's `app`) is on the shard that goes.
  const writers: Writer[] = [];
  for (const name of ['load-a', 'load-b']) {
    const install = await story.api('/api/v1/sqlite/auth/install', {
      json: { path: `data/${name}.sqlite`, name, requireUserAuth: false },
    });
    expect(install.res.status, JSON.stringify(install.body)).toBe(200);
    const token = install.body.token as string;
    const created = await story.sqlite('exec', 'CREATE TABLE load (n INTEGER PRIMARY KEY)', [], token);
    expect(created.res.status, JSON.stringify(created.body)).toBe(200);
    writers.push({ path: `data/${name}.sqlite`, token, acked: [], failures: [], successes: [] });
  }
  const app = { path: 'data/app.sqlite', token: story.sqliteToken, acked: [], failures: [], successes: [] };
  expect(
    (await story.sqlite('exec', 'CREATE TABLE IF NOT EXISTS load (n INTEGER PRIMARY KEY)')).res.status,
  ).toBe(200);
  writers.push(app);
  const onLost = await eventually(
    `the databases placed, one of them on ${LOST}`,
    async () => {
      const dbs = await story.sqliteDatabases();
      const placed = writers.map((w) => dbs.find((d) => d.spec.path === w.path)?.status?.shard);
      if (placed.some((s) => !s)) return undefined;
      const names = writers.filter((_, i) => placed[i] === LOST).map((w) => w.path);
      return names.length > 0 ? names : undefined;
    },
    2 * MINUTES,
  );
  const load = writers.filter((w) => onLost.includes(w.path));

  const measured = { rtoMs: 0, rtoFromLossMs: 0, alertFiringAfterMs: 0, alertResolvedAfterMs: 0 };
  const stop = { now: false };
  const loops = load.map((w) => writeLoop(story, w, stop));
  try {
    await eventually('writes acknowledged before the loss', () => load.every((w) => w.acked.length >= 10));
    const lossAt = Date.now();
    await story.scaleShards(1);
    // Watched from now on: the alert fires while the databases wait for the failover.
    const firing = watchAlert(prometheus, 'HostplaneSqliteShardLost', lossAt, 2 * MINUTES).then(
      (seen) => ({ seen, err: undefined }),
      (err: unknown) => ({ seen: undefined, err }),
    );
    // Every database of the lost shard answers again, from the other one, with writes past the outage.
    await eventually(
      'every database of the lost shard written again after its outage',
      () =>
        load.every((w) => {
          const firstFailure = w.failures.find((f) => f.at >= lossAt);
          return firstFailure && w.successes.some((t) => t > firstFailure.at + 1_000);
        }),
      3 * MINUTES,
    );
    const outage = load.map((w) => {
      const firstFailure = w.failures.find((f) => f.at >= lossAt)!.at;
      const back = w.successes.find((t) => t > firstFailure)!;
      return { rtoMs: back - firstFailure, fromLossMs: back - lossAt };
    });
    const rtoMs = (measured.rtoMs = Math.max(...outage.map((o) => o.rtoMs)));
    const rtoFromLossMs = (measured.rtoFromLossMs = Math.max(...outage.map((o) => o.fromLossMs)));
    console.log(
      `[story] failover RTO ${seconds(rtoMs)} s (first failed write to first acknowledged; ${seconds(rtoFromLossMs)} s from the scale-down), databases ${onLost.join(', ')}`,
    );
    // What the failures were while it moved: the shard's 503s with Retry-After, no 500.
    const statuses = new Set(
      load.flatMap((w) => w.failures.filter((f) => f.at >= lossAt).map((f) => f.status)),
    );
    expect([...statuses].filter((s) => s !== 503)).toEqual([]);
    expect(rtoMs).toBeLessThanOrEqual(30_000);

    // The shard-loss alert: pending, firing while the databases waited, resolved once they moved.
    const watched = await firing;
    if (!watched.seen) throw watched.err;
    const { firingAfterMs } = watched.seen;
    await alertResolved(prometheus, 'HostplaneSqliteShardLost', 2 * MINUTES);
    const alertResolvedAfterMs = (measured.alertResolvedAfterMs = Date.now() - lossAt);
    measured.alertFiringAfterMs = firingAfterMs;
    console.log(
      `[story] HostplaneSqliteShardLost firing ${seconds(firingAfterMs)} s and resolved ${seconds(alertResolvedAfterMs)} s after the scale-down`,
    );
    const at = async (selector: string) =>
      seconds((await firstNonZeroAfterMs(prometheus, selector, lossAt)) ?? NaN);
    console.log(
      `[story] after the scale-down: lost gauge ${await at(`hostplane_sqlite_shards{state="lost", namespace="${NS}"}`)} s, pending ${await at(`ALERTS{alertname="HostplaneSqliteShardLost", alertstate="pending"}`)} s, firing ${await at(`ALERTS{alertname="HostplaneSqliteShardLost", alertstate="firing"}`)} s`,
    );
    expect(await alertWas(prometheus, 'HostplaneSqliteFailoverBlocked', 'pending', lossAt)).toBe(false);
  } finally {
    stop.now = true;
    await Promise.all(loops);
  }

  // RPO: every acknowledged row is there (a graceful stop syncs last: nothing may be lost).
  let acked = 0;
  let lost = 0;
  for (const w of load) {
    const res = await story.sqlite('query', 'SELECT n FROM load', [], w.token);
    expect(res.res.status, JSON.stringify(res.body)).toBe(200);
    const rows = new Set((res.body.rows as { n: number }[]).map((r) => r.n));
    acked += w.acked.length;
    lost += w.acked.filter((n) => !rows.has(n)).length;
  }
  console.log(`[story] failover RPO: ${lost} of ${acked} acknowledged writes lost`);
  expect(lost).toBe(0);

  // The SqliteDatabase resources show the move: status and a FailedOver Event.
  for (const path of onLost) {
    const moved = await eventually(
      `${path}'s SqliteDatabase showing the move`,
      async () => {
        const db = (await story.sqliteDatabases()).find((d) => d.spec.path === path);
        return db?.status?.shard === KEPT && db.status.lastMove?.reason === 'failover' ? db : undefined;
      },
      2 * MINUTES,
    );
    expect(moved.status?.lastMove).toMatchObject({ from: LOST, to: KEPT, reason: 'failover' });
    expect(moved.status?.conditions?.find((c) => c.type === 'Placed')).toMatchObject({
      status: 'True',
      reason: 'FailedOver',
    });
    const selector = encodeURIComponent(`involvedObject.name=${moved.metadata.name},reason=FailedOver`);
    await eventually(`a FailedOver Event for ${moved.metadata.name}`, async () => {
      const events = await story.list(`/api/v1/namespaces/${NS}/events?fieldSelector=${selector}`);
      return events.length > 0;
    });
  }

  return { databases: onLost, acked, lost, ...measured };
}

/** The lost shard comes back (scaled up again): it serves none of the moved databases; they answer. */
export async function shardReturns(story: Story, moved: string[]): Promise<void> {
  await story.scaleShards(2);
  await eventually(
    'both shards Ready',
    async () => {
      const shards = await story.pods('sqlite');
      return shards.length === 2 && shards.every((p) => p.ready);
    },
    5 * MINUTES,
  );
  await eventually(
    'two live shards in Prometheus',
    async () => {
      const [live] = await story.prometheus!.query(
        `max(hostplane_sqlite_shards{state="live", namespace="${NS}"})`,
      );
      return Number(live?.value[1]) === 2;
    },
    2 * MINUTES,
  );
  for (const path of moved) {
    const db = (await story.sqliteDatabases()).find((d) => d.spec.path === path);
    expect(db?.status?.shard, path).toBe(KEPT);
  }
  const res = await story.sqlite('query', 'SELECT count(*) AS n FROM notes');
  expect(res.res.status, JSON.stringify(res.body)).toBe(200);
}
