import { createHash } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { AppError } from '../errors/index.js';
import type { Executor } from '../store/index.js';

/*
 * The create's Idempotency-Key (draft-ietf-httpapi-idempotency-key-header). The key is stored on
 * the deploy it made, with the fingerprint of its request, unique per site (a partial unique
 * index): a create repeated with the same key and request answers that deploy again (replayed),
 * another request with the key is a 422, and once the deploy is gone (cancelled, expired, pruned)
 * the key is free. Several replicas agree through the index alone: of two creates with one new
 * key, the second's insert waits for the first's transaction and then finds its row (see
 * insertDeploy), so it answers the replay.
 */

const rowsOf = <R>(result: unknown): R[] => (result as { rows: R[] }).rows;

/** 1 to 255 visible ASCII characters (no space, no control, nothing beyond ASCII). */
const KEY = /^[\x21-\x7e]{1,255}$/;
export const MAX_IDEMPOTENCY_KEY = 255;

/** The header's key, or undefined when the request has none; a malformed one is a 400. */
export function idempotencyKeyOf(header: string | string[] | undefined): string | undefined {
  if (header === undefined) return undefined;
  if (typeof header !== 'string' || !KEY.test(header))
    throw new AppError('INVALID_REQUEST', {
      message: `Idempotency-Key must be 1 to ${MAX_IDEMPOTENCY_KEY} visible ASCII characters (no spaces), sent once`,
    });
  return header;
}

/**
 * SHA-256 of the request (a CreateInput) as the server reads it: defaults spelled out, the files, sizes and
 * removed paths in a fixed order. Two bodies that create the same deploy share it.
 */
export function fingerprintOf(input: {
  files: Record<string, string>;
  draft: boolean;
  base: string;
  removed: string[];
  sizes: Record<string, number> | undefined;
  message: string | null;
}): string {
  const sorted = <V>(record: Record<string, V>) =>
    Object.keys(record)
      .sort()
      .map((k) => [k, record[k]]);
  const canonical = JSON.stringify([
    sorted(input.files),
    input.draft,
    input.base,
    [...input.removed].sort(),
    input.sizes === undefined ? null : sorted(input.sizes),
    input.message,
  ]);
  return createHash('sha256').update(canonical).digest('hex');
}

/** A create's key and fingerprint, recorded on the deploy it makes. */
export interface Idempotency {
  key: string;
  fingerprint: string;
}

/** Thrown in a create's transaction (rolling it back) when another deploy of the site holds the key. */
export class KeyTaken extends Error {
  constructor() {
    super('The Idempotency-Key is taken');
  }
}

/**
 * The deploy of the site the key made, when it still exists: its id, or a 422 when it was made
 * by another request.
 */
export async function keyedDeploy(
  db: Executor,
  siteId: number,
  { key, fingerprint }: Idempotency,
): Promise<string | undefined> {
  const [row] = rowsOf<{ id: string; idempotency_fingerprint: string }>(
    await db.execute(sql`select id, idempotency_fingerprint from deploys
      where site_id = ${siteId}::int and idempotency_key = ${key}`),
  );
  if (!row) return undefined;
  if (row.idempotency_fingerprint !== fingerprint)
    throw new AppError('IDEMPOTENCY_KEY_REUSED', { deployId: row.id });
  return row.id;
}

/** The hashes a deploy still lacks, each once, in order (what its create answered, as of now). */
export async function requiredNow(db: Executor, id: string): Promise<string[]> {
  return rowsOf<{ hash: string }>(
    await db.execute(sql`select distinct hash from deploy_files where deploy_id = ${id} and size is null`),
  )
    .map((r) => r.hash)
    .sort();
}
