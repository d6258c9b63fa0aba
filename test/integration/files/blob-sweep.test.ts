import { createHash } from 'node:crypto';
import { once } from 'node:events';
import path from 'node:path';
import Database from 'better-sqlite3';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blobKeyForHash, type BlobStore } from '../../../src/blob/index.js';
import { SMALL_BLOB_DB_FILE } from '../../../src/blob/small-blob-db.js';
import { locateNativeParts } from '../../../src/config/index.js';
import { eventually } from '../../support/eventually.js';
import {
  backends,
  metricValue,
  scrapeMetrics,
  startHostplane,
  upload,
  type TestHostplane,
  type TestSite,
} from '../../support/hostplane.js';

/** Steps a test runs around the server's own blob writes and deletes (one key at a time). */
interface BlobHooks {
  /** Runs instead of the write of `key`; call `write()` to do it. */
  aroundPut?: (key: string, write: () => Promise<void>) => Promise<void>;
  /** Runs before the delete of `key` (the sweeper's, under `signal`: its deadline), which waits for it. */
  beforeDelete?: (key: string, signal: AbortSignal | undefined) => Promise<void>;
  /** Runs when the store rejected the delete of `key`, before the sweeper sees it. */
  deleteFailed?: (key: string, err: unknown) => void;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** A promise and its resolver: an event a test waits for, or a gate it opens. */
function signal() {
  let fire!: () => void;
  const fired = new Promise<void>((resolve) => (fire = resolve));
  return { fired, fire };
}

describe.each(backends)('orphan blob sweeping (%s)', (backend) => {
  let hp: TestHostplane;
  let site: TestSite;
  const host = 'gc.localhost:8080';
  const hooks: BlobHooks = {};
  /** How many times the server deleted each key. */
  const deletes = new Map<string, number>();
  const hooked = (real: BlobStore): BlobStore =>
    new Proxy(real, {
      get(target, prop, receiver) {
        if (prop === 'put')
          return async (key: string, body: Buffer) => {
            const around = hooks.aroundPut;
            if (around) await around(key, () => target.put(key, body));
            else await target.put(key, body);
          };
        if (prop === 'delete')
          return async (key: string, signal?: AbortSignal) => {
            await hooks.beforeDelete?.(key, signal);
            deletes.set(key, (deletes.get(key) ?? 0) + 1);
            try {
              await target.delete(key, signal);
            } catch (err) {
              hooks.deleteFailed?.(key, err);
              throw err;
            }
          };
        return Reflect.get(target, prop, receiver);
      },
    });
  beforeAll(async () => {
    hp = await startHostplane(backend, { wrapBlobs: hooked });
    site = await hp.createSite('gc');
  });
  afterAll(() => hp?.stop());

  const blobOf = async (path: string) => (await hp.services.files.find(site.siteId, path))?.blobKey;
  const del = (path: string) => hp.services.files.delete(site.siteId, path);
  const sweep = (options?: { deleteDeadlineMs: number }) => hp.services.files.sweepOrphanBlobs(0, options);
  const served = async (path: string) => {
    const res = await hp.request(`/${path}`, { host });
    return res.status === 200 ? res.text() : `HTTP ${res.status}`;
  };
  const claimEvents = async (event: string) =>
    metricValue(await scrapeMetrics(hp), 'hostplane_blob_claim_events_total', { event });
  /** Uploads `content`, then deletes the file: its blob is an orphan the sweeper may take. */
  const orphan = async (path: string, content: string) => {
    await upload(hp, site, path, content);
    const hash = (await blobOf(path))!;
    await del(path);
    return blobKeyForHash(hash);
  };

  it('deletes blobs no file references and keeps referenced ones', async () => {
    await upload(hp, site, 'keep.html', 'kept bytes');
    await upload(hp, site, 'drop.html', 'dropped bytes');
    const kept = (await blobOf('keep.html'))!;
    const dropped = (await blobOf('drop.html'))!;
    await del('drop.html');
    expect(await sweep()).toBeGreaterThanOrEqual(1);
    expect(await hp.services.blobs.head(blobKeyForHash(dropped))).toBeUndefined();
    expect(await hp.services.blobs.head(blobKeyForHash(kept))).toBeDefined();
    expect(await served('keep.html')).toBe('kept bytes');
  });

  it('keeps blobs younger than the grace period', async () => {
    await upload(hp, site, 'young.html', 'young bytes');
    const young = (await blobOf('young.html'))!;
    await del('young.html');
    await hp.services.files.sweepOrphanBlobs(60 * 60 * 1000);
    expect(await hp.services.blobs.head(blobKeyForHash(young))).toBeDefined();
  });

  it('re-writes the bytes when the sweeper deletes them between the upload’s write and its commit', async () => {
    const content = 're-deployed while sweeping';
    const key = await orphan('race.html', content);
    let swept = false;
    hooks.aroundPut = async (k, write) => {
      if (k !== key) return write();
      hooks.aroundPut = undefined;
      await write();
      // The whole sweep runs here: claim, delete, release. The commit must notice.
      await sweep();
      swept = (await hp.services.blobs.head(key)) === undefined;
    };
    const rewritesBefore = await claimEvents('upload_rewrote');
    await upload(hp, site, 'race.html', content);
    expect(swept, 'the sweeper removed the blob between its write and the commit').toBe(true);
    expect(await claimEvents('upload_rewrote')).toBe(rewritesBefore + 1);
    expect(await served('race.html')).toBe(content);
  });

  it('re-writes the bytes when a claimed blob’s delete lands after the upload wrote them', async () => {
    // The upload reads the blob's state (unclaimed) → the sweeper claims it → the upload writes →
    // the sweeper's delete lands → the upload commits: the changed generation must stop it.
    const content = 'written between claim and delete';
    const key = await orphan('late-delete.html', content);
    const atDelete = signal();
    const proceed = signal();
    hooks.beforeDelete = async (k) => {
      if (k !== key) return;
      hooks.beforeDelete = undefined;
      atDelete.fire();
      await proceed.fired;
    };
    hooks.aroundPut = async (k, write) => {
      if (k !== key) return write();
      hooks.aroundPut = undefined;
      const sweeping = sweep();
      await atDelete.fired; // claimed, delete not sent yet
      await write();
      proceed.fire();
      await sweeping;
      expect(await hp.services.blobs.head(key), 'the delete landed after the write').toBeUndefined();
    };
    await upload(hp, site, 'late-delete.html', content);
    expect(await served('late-delete.html')).toBe(content);
  });

  it('makes an upload of bytes the sweeper is deleting wait for the delete, then write them', async () => {
    const content = 'uploaded while its blob is being deleted';
    const key = await orphan('waiting.html', content);
    const waitsBefore = await claimEvents('upload_waited');
    let uploading: Promise<void> | undefined;
    hooks.beforeDelete = async (k) => {
      if (k !== key) return;
      hooks.beforeDelete = undefined;
      // The claim is live: the upload must hold back until the sweeper is done.
      uploading = upload(hp, site, 'waiting.html', content);
      await eventually('the upload to wait for the claim', async () => {
        return (await claimEvents('upload_waited')) > waitsBefore;
      });
    };
    expect(await sweep()).toBeGreaterThanOrEqual(1);
    await uploading;
    expect(await served('waiting.html')).toBe(content);
    expect(await hp.services.blobs.head(key)).toBeDefined();
  });

  it('lets only one of two concurrent sweepers delete a blob', async () => {
    const key = await orphan('twice.html', 'swept by one sweeper only');
    deletes.delete(key);
    let second: number | undefined;
    hooks.beforeDelete = async (k) => {
      if (k !== key) return;
      hooks.beforeDelete = undefined;
      // Another replica sweeps while the first holds its claim on the blob.
      second = await sweep();
    };
    await sweep();
    expect(second).toBeDefined();
    expect(deletes.get(key)).toBe(1);
    expect(await hp.services.blobs.head(key)).toBeUndefined();
  });

  it('does not wait for a claim whose sweeper died (expired lease)', async () => {
    const content = 'after a sweeper crashed';
    const hash = sha256(content);
    await hp.services.store.db.execute(
      sql`insert into blob_claims (hash, generation, claimed_until) values (${hash}, 7, now() - interval '1 second')`,
    );
    const waitsBefore = await claimEvents('upload_waited');
    await upload(hp, site, 'crashed.html', content);
    expect(await claimEvents('upload_waited')).toBe(waitsBefore);
    expect(await served('crashed.html')).toBe(content);
  });

  it('leaves a referenced blob’s generation alone (no upload has to retry for it)', async () => {
    await upload(hp, site, 'referenced.html', 'referenced bytes');
    const hash = (await blobOf('referenced.html'))!;
    const generation = async () => {
      const result = (await hp.services.store.db.execute(
        sql`select generation::int as g from blob_claims where hash = ${hash}`,
      )) as unknown as { rows: { g: number }[] };
      return result.rows[0]?.g;
    };
    const before = await generation();
    await sweep();
    expect(await generation()).toBe(before);
    expect(await served('referenced.html')).toBe('referenced bytes');
  });

  it('counts a delete that missed its deadline, keeps its blob and claim, and sweeps on', async () => {
    await sweep(); // no orphans of earlier tests: the two below are the only ones
    const keys = [
      await orphan('late-1.html', 'missed its deadline'),
      await orphan('late-2.html', 'swept on'),
    ];
    const listed: string[] = [];
    for await (const blob of hp.services.blobs.list('blobs/')) listed.push(blob.key);
    // The one the sweep reaches first misses its deadline; the other must go all the same.
    const [stuck, next] = keys.sort((a, b) => listed.indexOf(a) - listed.indexOf(b)) as [string, string];
    const hash = stuck.slice('blobs/'.length);
    const passedBefore = await claimEvents('sweeper_deadline_passed');
    let failure: unknown;
    if (backend === 'pglite+fs') {
      // Another connection holds the small objects' write lock: the delete waits in the store's
      // queue until its deadline drops it.
      const file = path.join(hp.dataDir, 'files', SMALL_BLOB_DB_FILE);
      const holder = new Database(file, { nativeBinding: locateNativeParts().binding, timeout: 0 });
      holder.exec('BEGIN IMMEDIATE');
      hooks.deleteFailed = (k, err) => {
        if (k !== stuck) return;
        hooks.deleteFailed = undefined;
        failure = err;
        holder.exec('ROLLBACK');
        holder.close();
      };
    } else {
      // A stalled request: it reaches the store only once its deadline has passed.
      hooks.beforeDelete = async (k, deadline) => {
        if (k !== stuck) return;
        hooks.beforeDelete = undefined;
        await once(deadline!, 'abort');
      };
      hooks.deleteFailed = (k, err) => {
        if (k !== stuck) return;
        hooks.deleteFailed = undefined;
        failure = err;
      };
    }
    expect(await sweep({ deleteDeadlineMs: 1_000 })).toBe(1);
    expect(failure, 'the store rejected the late delete').toBeDefined();
    expect(await claimEvents('sweeper_deadline_passed')).toBe(passedBefore + 1);
    expect(await hp.services.blobs.head(next)).toBeUndefined();
    expect(await hp.services.blobs.head(stuck)).toBeDefined();
    // The claim is left to expire: a delete aborted in flight may still land until then.
    const live = async () => {
      const result = (await hp.services.store.db.execute(
        sql`select claimed_until > now() as live from blob_claims where hash = ${hash}`,
      )) as unknown as { rows: { live: boolean }[] };
      return result.rows[0]?.live;
    };
    expect(await live()).toBe(true);
    // Once it has expired, a later sweep removes the blob.
    await hp.services.store.db.execute(
      sql`update blob_claims set claimed_until = now() - interval '1 second' where hash = ${hash}`,
    );
    expect(await sweep()).toBe(1);
    expect(await hp.services.blobs.head(stuck)).toBeUndefined();
  });
});
