import { setTimeout as delay } from 'node:timers/promises';
import { sql } from 'drizzle-orm';
import { blobKeyForHash, type BlobStore } from '../blob/index.js';
import { AppError } from '../errors/index.js';
import { dbOp } from '../observability/index.js';
import type { Platform, Principal, SiteEvents, SiteUsage } from '../platform/index.js';
import type { Db, Executor } from '../store/index.js';
import { commitDeployBlob, progress, type DeployState } from './deploy-blobs.js';
import { commitParts, hashInfo, missingHashes, type PartToCommit } from './deploy-bulk-commit.js';
import { deployEventsTotal, deploySwitchWaitSeconds } from './metrics.js';
import { previewable, previewRows } from './deploy-previews.js';
import { pendingBytes, pruneDeploys, rollbackLimit, rollbackUsage } from './deploy-retention.js';
import {
  assertSetFits,
  liveDeployId,
  liveSetChanged,
  snapshotLiveSet,
  switchLiveSet,
} from './deploy-switch.js';
import { recordChanges } from './deploy-changes.js';
import { insertDeploy, normalizeManifest, precheck, type CreateInput } from './deploy-create.js';
import { sweepIdleDeploys } from './deploy-lifecycle.js';
import { fingerprintOf, KeyTaken, keyedDeploy, requiredNow } from './deploy-idempotency.js';
import { assertPendingWithinStorage } from './quota.js';
import { maxBytesFor } from './upload-rules.js';
import type { FilesService } from './service.js';
import type { DeployClient } from './deploy-client.js';
import {
  DEPLOY_ID,
  newDeployId,
  offsetOf,
  toDeploy,
  type Deploy,
  type DeployDbRow,
  type ManifestEntry,
  type PreviewRow,
} from './deploy-rows.js';

export { DEPLOY_RETENTION, DRAFT_RETENTION } from './deploy-retention.js';
export { MAX_DEPLOY_FILES, type CreateInput } from './deploy-create.js';
export { MAX_OPEN_DEPLOYS } from './deploy-lifecycle.js';
export type { DeployState } from './deploy-blobs.js';
export { DEPLOY_ID, type Deploy, type ManifestEntry, type PreviewRow } from './deploy-rows.js';

const rowsOf = <R>(result: unknown): R[] => (result as { rows: R[] }).rows;

export { MAX_DEPLOY_MESSAGE, MAX_MANIFEST_BYTES } from './limits.js';

const notFound = (id: string) => new AppError('NOT_FOUND', { message: `Deploy ${id} not found` });

/**
 * Deploys: a manifest of path → SHA-256, the blobs the site lacks uploaded by hash, then one switch
 * of the live file set (deploy-switch.ts). A blob counts as known for a site only when that site
 * already references it (a live file or a deploy's uploaded blob): a tenant never learns that
 * another has some bytes, nor gets them without sending them.
 */
export class DeploysService {
  constructor(
    private readonly db: Db,
    private readonly blobs: BlobStore,
    private readonly files: FilesService,
    private readonly platform: Platform,
    private readonly upgradeUrl: string,
    /** Wait after a switch so that every edge has heard of it (see edge/cache.ts, sync window). */
    private readonly syncWindowMs: number | undefined,
    /** An unfinished deploy idle (no create, no blob upload) for this long is swept. */
    private readonly idleMs: number,
    /** Several replicas (syncWindowMs set): asks the live edge processes to acknowledge a switch. */
    private readonly events?: Pick<SiteEvents, 'awaitAcks'>,
  ) {}

  /** Validates a manifest (see deploy-create.ts). */
  normalizeManifest(files: Record<string, string>): Map<string, string> {
    return normalizeManifest(files, this.files.types);
  }

  /**
   * A new deploy: what can be checked without the database first (paths, types, declared sizes),
   * then its rows in one transaction (deploy-create.ts). Answers the hashes to upload. With an
   * Idempotency-Key (deploy-idempotency.ts), the deploy the key made from the same request, if it
   * still exists, is answered instead (`replayed`, `required` as of now).
   */
  async create(
    usage: SiteUsage,
    principal: Principal | undefined,
    input: CreateInput,
    client: DeployClient = 'api',
    idempotencyKey?: string,
  ): Promise<{ deploy: Deploy; required: string[]; replayed: boolean }> {
    const siteId = usage.site.id;
    const idempotency =
      idempotencyKey === undefined ? undefined : { key: idempotencyKey, fingerprint: fingerprintOf(input) };
    const replay = async (id: string) => {
      deployEventsTotal.inc({ event: 'create_replayed' });
      return { deploy: await this.get(siteId, id), required: await requiredNow(this.db, id), replayed: true };
    };
    const known = idempotency && (await keyedDeploy(this.db, siteId, idempotency));
    if (known) return replay(known);
    const manifest = normalizeManifest(input.files, this.files.types);
    const { removed, declared } = precheck(input, manifest);
    // Another create with the key may commit while this one runs: its deploy is then answered. It
    // may also be gone again by the time it is read (cancelled at once): this one tries anew.
    for (let attempt = 1; ; attempt++) {
      const id = newDeployId();
      try {
        const required = await dbOp('create_deploy', () =>
          this.db.transaction((tx) =>
            insertDeploy(tx, {
              id,
              usage,
              upgradeUrl: this.upgradeUrl,
              keyId: principal?.key?.id ?? null,
              keyPrefix: principal?.key?.prefix ?? null,
              input,
              client,
              removed,
              declared,
              manifest,
              idempotency,
            }),
          ),
        );
        deployEventsTotal.inc({ event: 'created' });
        return { deploy: await this.get(siteId, id), required, replayed: false };
      } catch (err) {
        if (!(err instanceof KeyTaken) || !idempotency) throw err;
        const other = await keyedDeploy(this.db, siteId, idempotency);
        if (other) return replay(other);
        if (attempt >= 3)
          throw new AppError('CONFLICT', {
            message: 'A request with this Idempotency-Key is in progress: try again in a moment',
          });
      }
    }
  }

  /**
   * Deletes a deploy that is not live: an unfinished one (cancelled), a draft, or a published one
   * kept for rollback (its preview goes with it). Under the site lock, as every switch and prune,
   * so it never races a finalize or a restore; a finished one moves the site's version (edges drop
   * its cached preview) and the rollback bound is recounted.
   */
  async remove(siteId: number, id: string): Promise<void> {
    const before = await this.get(siteId, id);
    const finished = before.state === 'draft' || before.state === 'published';
    await this.files.write(siteId, 'deploy_delete', async (tx, usage) => {
      const locked = await this.get(siteId, id, tx, true);
      if ((await liveDeployId(tx, siteId)) === id)
        throw new AppError('CONFLICT', {
          message: `Deploy ${id} is live: deploy or restore another one first, then delete it`,
        });
      await tx.execute(sql`delete from deploys where id = ${id}`);
      if (locked.state === 'draft' || locked.state === 'published') {
        await pruneDeploys(tx, siteId, usage.plan);
        await this.platform.recordChange(tx, siteId, {});
      }
    });
    deployEventsTotal.inc({ event: finished ? 'deleted' : 'cancelled' });
    if (finished && this.syncWindowMs !== undefined) await this.untilEveryReplicaServes(this.syncWindowMs);
  }

  /** One deploy of the site; `forUpdate` (under the site lock) keeps the sweep of abandoned ones off it. */
  async get(siteId: number, id: string, db: Executor = this.db, forUpdate = false): Promise<Deploy> {
    if (!DEPLOY_ID.test(id)) throw notFound(id);
    const [row] = rowsOf<DeployDbRow>(
      await db.execute(
        sql`select * from deploys where id = ${id} and site_id = ${siteId}::int ${forUpdate ? sql`for update` : sql``}`,
      ),
    );
    if (!row) throw notFound(id);
    return toDeploy(row);
  }

  /**
   * The largest body a blob of this deploy may have: every path naming it must fit its own type's
   * limit, so a video's 50 MB only when each of them is a video. `narrowest` is a path with the
   * smallest limit (named in the refusal).
   */
  async blobLimit(
    deploy: Deploy,
    hash: string,
  ): Promise<{ limit: number; narrowest: string; uploaded: number | null }> {
    const rows = rowsOf<{ path: string; size: string | null }>(
      await this.db.execute(
        sql`select path, size::text from deploy_files where deploy_id = ${deploy.id} and hash = ${hash}
          order by path collate "C"`,
      ),
    );
    if (rows.length === 0)
      throw new AppError('NOT_FOUND', { message: `No file of deploy ${deploy.id} has the hash ${hash}` });
    let narrowest = rows[0]!.path;
    for (const r of rows) if (maxBytesFor(r.path) < maxBytesFor(narrowest)) narrowest = r.path;
    const size = rows[0]!.size;
    return { limit: maxBytesFor(narrowest), narrowest, uploaded: size === null ? null : Number(size) };
  }

  /** The deploy's state and how many hashes it still lacks. */
  progress(id: string): Promise<{ state: DeployState; remaining: number }> {
    return progress(this.db, id);
  }

  putBlob(hash: string, bytes: Buffer): Promise<void> {
    return this.blobs.put(blobKeyForHash(hash), bytes);
  }

  copyBlob(tmpKey: string, hash: string): Promise<void> {
    return this.blobs.copy(tmpKey, blobKeyForHash(hash));
  }

  /** Records an uploaded blob (see deploy-blobs.ts), within the storage of unpublished deploys. */
  async commitBlob(deploy: Deploy, hash: string, size: number, write: () => Promise<void>) {
    const usage = await this.platform.getUsage(deploy.siteId);
    if (!usage) throw notFound(deploy.id);
    // The deploy's bytes count the blob once per path naming it.
    const [paths] = rowsOf<{ n: number }>(
      await this.db.execute(
        sql`select count(*)::int as n from deploy_files where deploy_id = ${deploy.id} and hash = ${hash} and size is null`,
      ),
    );
    const pending = await pendingBytes(this.db, deploy.siteId);
    assertPendingWithinStorage(usage, this.upgradeUrl, pending, size * paths!.n);
    deployEventsTotal.inc({ event: 'blob_uploaded' });
    return commitDeployBlob(this.db, this.blobs, deploy.id, hash, size, write);
  }

  /** The manifest's view of some hashes, for a bulk upload (deploy-bulk-commit.ts). */
  hashInfo(deploy: Deploy, hashes: string[]) {
    return hashInfo(this.db, deploy, hashes);
  }

  /** Writes and records a bulk upload's verified blobs, within the storage of unpublished deploys. */
  async commitParts(deploy: Deploy, parts: PartToCommit[], pending?: number) {
    const usage = await this.platform.getUsage(deploy.siteId);
    if (!usage) throw notFound(deploy.id);
    return commitParts(this.db, this.blobs, usage, this.upgradeUrl, deploy, parts, pending);
  }

  /** The first `max` hashes a deploy still lacks, its state and how many it lacks. */
  missingHashes(deploy: Deploy, max: number) {
    return missingHashes(this.db, deploy, max);
  }

  /** Finalizes a ready deploy: a draft stays a preview, any other goes live. */
  async finalize(siteId: number, id: string): Promise<Deploy> {
    const deploy = await this.get(siteId, id);
    if (deploy.state === 'uploading') {
      const { remaining } = await this.progress(id);
      throw new AppError('CONFLICT', {
        message: `Deploy ${id} still lacks ${remaining} blob${remaining === 1 ? '' : 's'}: upload them first`,
      });
    }
    if (deploy.state !== 'ready')
      throw new AppError('CONFLICT', { message: `Deploy ${id} is already finalized (${deploy.state})` });
    if (deploy.draft) {
      // Checked like a publish (its preview serves it as the site): the set must fit the plan.
      await this.db.transaction(async (tx) => {
        const usage = await this.platform.lockUsage(tx, siteId);
        await assertSetFits(tx, usage, this.upgradeUrl, deploy);
        await recordChanges(tx, siteId, id);
        await tx.execute(sql`update deploys set state = 'draft', finalized_at = now()
          where id = ${id} and state = 'ready'`);
        await pruneDeploys(tx, siteId, usage.plan);
      });
      deployEventsTotal.inc({ event: 'finalized_draft' });
      return this.get(siteId, id);
    }
    return this.switchTo(siteId, id, ['ready'], 'finalize');
  }

  /** Publishes a finalized draft. */
  publish(siteId: number, id: string): Promise<Deploy> {
    return this.switchTo(siteId, id, ['draft'], 'publish');
  }

  /** Makes an earlier published deploy live again (metadata only: its blobs are kept). */
  restore(siteId: number, id: string): Promise<Deploy> {
    return this.switchTo(siteId, id, ['published'], 'restore');
  }

  private async switchTo(siteId: number, id: string, from: DeployState[], action: string): Promise<Deploy> {
    await this.get(siteId, id);
    const done = await this.files.write(siteId, `deploy_${action}`, async (tx, usage) => {
      // Under the site lock, as every prune is: a deploy gone by now is a 404, never a broken switch.
      const locked = await this.get(siteId, id, tx, true);
      if (!from.includes(locked.state))
        throw new AppError('CONFLICT', {
          message:
            action === 'publish' && locked.state === 'published'
              ? `Deploy ${id} is published already: restore it to make it live again`
              : action === 'restore' && locked.state === 'draft'
                ? `Deploy ${id} is a draft: publish it instead`
                : `Deploy ${id} is ${locked.state}: it cannot be ${action === 'finalize' ? 'finalized' : `${action}d`}`,
        });
      const live = await liveDeployId(tx, siteId);
      const liveChanged = await liveSetChanged(tx, siteId, live);
      // The live deploy restored while the live files are still its own: nothing to switch (a
      // repeated rollback, e.g. a client's retry whose first answer was lost), and its recorded
      // changes stay those of its own switch.
      if (action === 'restore' && live === id && !liveChanged)
        return { deploy: await this.get(siteId, id, tx), switched: false };
      if (liveChanged) await snapshotLiveSet(tx, siteId, newDeployId());
      await recordChanges(tx, siteId, id);
      const change = await switchLiveSet(tx, usage, this.upgradeUrl, id);
      await this.platform.recordChange(tx, siteId, change);
      await pruneDeploys(tx, siteId, usage.plan);
      // As committed: later switches (of other replicas too) may prune it before this returns.
      return { deploy: await this.get(siteId, id, tx), switched: true };
    });
    if (!done.switched) return done.deploy;
    deployEventsTotal.inc({ event: action });
    if (this.syncWindowMs !== undefined) await this.untilEveryReplicaServes(this.syncWindowMs);
    return done.deploy;
  }

  /**
   * After a switch's commit: returns once every live edge process acknowledged it, or else once
   * the sync window has passed, when every replica has heard of it anyway (edge/sync.ts).
   */
  private async untilEveryReplicaServes(windowMs: number): Promise<void> {
    const committed = performance.now();
    const acked = (await this.events?.awaitAcks(windowMs)) ?? false;
    if (!acked) {
      const left = windowMs - (performance.now() - committed);
      if (left > 0) await delay(left);
    }
    deploySwitchWaitSeconds.observe(
      { outcome: acked ? 'acked' : 'fallback' },
      (performance.now() - committed) / 1000,
    );
  }

  async list(siteId: number, page: number, perPage: number) {
    const [total] = rowsOf<{ n: number }>(
      await this.db.execute(sql`select count(*)::int as n from deploys where site_id = ${siteId}::int`),
    );
    const deploys = rowsOf<DeployDbRow>(
      await this.db.execute(sql`select * from deploys where site_id = ${siteId}::int
        order by created_at desc, id desc limit ${perPage}::int offset ${offsetOf(page, perPage)}::bigint`),
    ).map(toDeploy);
    const live = await liveDeployId(this.db, siteId);
    return { total: total!.n, deploys, live, liveChanged: await liveSetChanged(this.db, siteId, live) };
  }

  async manifest(id: string, page: number, perPage: number): Promise<ManifestEntry[]> {
    return rowsOf<{ path: string; hash: string; size: string | null; content_type: string }>(
      await this.db.execute(sql`select path, hash, size::text, content_type from deploy_files
        where deploy_id = ${id} order by path collate "C"
        limit ${perPage}::int offset ${offsetOf(page, perPage)}::bigint`),
    ).map((r) => ({
      path: r.path,
      hash: r.hash,
      size: r.size === null ? null : Number(r.size),
      contentType: r.content_type,
    }));
  }

  /** What the site's deploys kept for rollback hold, and their bound (see pruneDeploys). */
  async rollbackUsage(usage: SiteUsage): Promise<{ bytes: number; deploys: number; limit: number | null }> {
    const kept = (await rollbackUsage(this.db, [usage.site.id])).get(usage.site.id);
    return { bytes: kept?.bytes ?? 0, deploys: kept?.deploys ?? 0, limit: rollbackLimit(usage.plan) };
  }

  /** Bytes held for rollback by each of some sites (absent: none). */
  async rollbackBytes(siteIds: number[]): Promise<Map<number, number>> {
    const kept = await rollbackUsage(this.db, siteIds);
    return new Map([...kept].map(([id, k]) => [id, k.bytes]));
  }

  liveDeployId(siteId: number): Promise<string | undefined> {
    return liveDeployId(this.db, siteId);
  }

  /** Deletes unfinished deploys idle for longer than the configured window (deploy-lifecycle.ts). */
  sweepAbandoned(): Promise<number> {
    return sweepIdleDeploys(this.db, this.idleMs);
  }

  /** How often the sweep runs: a quarter of the window, at most every minute, at least every second. */
  get sweepEveryMs(): number {
    return Math.min(60_000, Math.max(1000, Math.floor(this.idleMs / 4)));
  }

  /** A deploy served at its preview host (see deploy-previews.ts). */
  previewable(siteId: number, id: string): Promise<boolean> {
    return previewable(this.db, siteId, id);
  }

  /** The rows of some paths of a deploy, for the edge's preview hosts. */
  previewRows(id: string, paths: string[]): Promise<PreviewRow[]> {
    return previewRows(this.db, id, paths);
  }
}
