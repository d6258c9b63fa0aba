import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { AppError } from '../../errors/index.js';
import { ApiError, type PublicApi } from '../api.js';
import { result } from '../results.js';
import { bytesOf, content, pageArgs, pagination, tool, withNextPage } from '../tool.js';

type Json = Record<string, unknown>;

/** Inline files per deploy_files call: bigger sites go through deploy_manifest + upload_blob. */
export const MAX_INLINE_FILES = 1000;
/**
 * Times deploy_files waits out a refused upload of one blob (429: the site's, 503: the
 * process's; the API says how long in Retry-After) before it gives up with that answer.
 */
const UPLOAD_ATTEMPTS = 5;
/** The longest Retry-After it waits, whatever the answer says. */
const MAX_RETRY_WAIT_MS = 10_000;
/**
 * deploy_files sends its blobs in buckets through the bulk upload (POST /api/v1/deploys/{id}/files,
 * one multipart request per bucket): at most this many blobs and bytes a bucket (the route takes
 * 1,000 parts and 50 MB), a few buckets at once. The API admits each request by the bytes it may
 * hold; what does not fit is refused 429/503 and waited out (sendBucket).
 */
const BUCKET_BLOBS = 1000;
const BUCKET_BYTES = 8 * 1024 * 1024;
const BUCKETS_AT_ONCE = 4;

// The create's Idempotency-Key, one per tool call: harmless today (the injected call, api.ts, is
// never retried), it makes a retry added later safe (the API answers a repeat with its deploy).
const createHeaders = () => ({ 'idempotency-key': randomUUID() });

const deployId = z
  .string()
  .regex(/^[a-z2-7]{12}$/, 'must be a deploy id (12 characters, a-z and 2-7)')
  .describe('The deploy id (from list_deploys or a deploy tool)');
const sha256 = z.string().regex(/^[0-9a-f]{64}$/, 'must be a SHA-256 in lower-case hex');

const changes = z
  .object({ added: z.int(), changed: z.int(), removed: z.int() })
  .nullable()
  .describe('Paths added, changed and removed against the live site');

/**
 * Whether a deploy is the whole site or changes to the live one: required, so that an agent that
 * means to change one page never wipes the rest by leaving an argument out (the API's own
 * default, the whole site, stays for clients that send a folder).
 */
const mode = z
  .enum(['replace', 'merge'])
  .describe(
    'replace: the files given are the whole new site, every live file not given is removed. merge: the files given are added or changed over the live site, every other live file stays (use removed to drop some)',
  );
const removed = z
  .array(z.string().min(1).max(1024))
  .max(MAX_INLINE_FILES)
  .optional()
  .describe('With mode merge: live paths to drop (a file, or a folder and everything in it)');

/** The API's create body for a mode. */
const baseOf = (m: 'replace' | 'merge', gone: string[] | undefined) =>
  m === 'merge' ? { base: 'live', removed: gone ?? [] } : gone?.length ? { removed: gone } : {};

const deploy = z.looseObject({
  id: z.string(),
  state: z.string(),
  draft: z.boolean(),
  live: z.boolean(),
  file_count: z.int(),
  bytes: z.int(),
  created_at: z.string(),
  preview_url: z.string().nullable(),
  changes,
});

const sha = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
const idPath = (id: string, action = '') => `/api/v1/deploys/${id}${action}`;

/** The fields of a deploy answer worth showing (no `success`). */
function deployFields(answer: Json): Json {
  const { success: _success, required: _required, ...rest } = answer;
  return rest;
}

/** The site's own address, for a deploy that went live. */
async function siteAddress(api: PublicApi): Promise<string> {
  const info = await api.call<{ base_url: string }>('GET', '/api/v1/hosting-info');
  return info.base_url;
}

/** Blobs in buckets of at most BUCKET_BLOBS and BUCKET_BYTES (a larger blob alone). */
function bucketsOf(blobs: Array<{ hash: string; bytes: Buffer }>) {
  const buckets: Array<typeof blobs> = [];
  let bucket: typeof blobs = [];
  let size = 0;
  for (const blob of blobs) {
    if (bucket.length > 0 && (bucket.length >= BUCKET_BLOBS || size + blob.bytes.length > BUCKET_BYTES)) {
      buckets.push(bucket);
      bucket = [];
      size = 0;
    }
    bucket.push(blob);
    size += blob.bytes.length;
  }
  if (bucket.length > 0) buckets.push(bucket);
  return buckets;
}

/** One file part per blob, named by its hash. */
function multipart(blobs: Array<{ hash: string; bytes: Buffer }>): { body: Buffer; contentType: string } {
  const boundary = `hostplane-mcp-${randomBytes(12).toString('hex')}`;
  const pieces = blobs.flatMap(({ hash, bytes }) => [
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="${hash}"; filename="${hash}"\r\n` +
        'Content-Type: application/octet-stream\r\n\r\n',
    ),
    bytes,
    Buffer.from('\r\n'),
  ]);
  pieces.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(pieces), contentType: `multipart/form-data; boundary=${boundary}` };
}

/**
 * One bucket of a deploy's blobs in one request, through the API's upload byte budget like any
 * upload. A refusal (429: the site's share is held, by its other uploads or other clients; 503: the
 * process's budget is spent) is waited out per its Retry-After.
 */
async function sendBucket(api: PublicApi, id: string, blobs: Array<{ hash: string; bytes: Buffer }>) {
  const { body, contentType } = multipart(blobs);
  for (let attempt = 1; ; attempt++) {
    try {
      await api.call('POST', idPath(id, '/files'), { bytes: body, headers: { 'content-type': contentType } });
      return;
    } catch (err) {
      const busy = err instanceof ApiError && (err.status === 429 || err.status === 503);
      if (!busy || attempt === UPLOAD_ATTEMPTS) throw err;
      const seconds = Number(err.retryAfter ?? 1);
      await sleep(Math.min(Number.isFinite(seconds) ? seconds * 1000 : 1000, MAX_RETRY_WAIT_MS));
    }
  }
}

/** The deploy after a switch, and where it is served. */
async function switched(
  api: PublicApi,
  id: string,
  action: 'finalize' | 'publish' | 'restore',
): Promise<Json> {
  const answer = await api.call<Json>('POST', idPath(id, `/${action}`));
  const live = answer.live === true;
  return { deploy: deployFields(answer), url: live ? await siteAddress(api) : answer.preview_url };
}

const SWITCHED = 'the deploy and the address it is served at';

const switchOutput = {
  deploy,
  url: z.string().nullable().describe('The site address when live, else the preview address'),
};

export const deployTools = [
  tool({
    name: 'deploy_files',
    feature: 'deploys',
    title: 'Deploy a whole site from files given inline',
    description:
      `Deploys files given inline (at most ${MAX_INLINE_FILES}, path + content, text or base64) in one atomic switch: ` +
      'creates a deploy, uploads only the contents the site lacks, finalizes. mode is required: merge changes only the ' +
      'files given (every other live file stays; removed drops paths), replace makes the files given the whole site ' +
      '(every live file not given is gone from the new version; earlier deploys keep them: restore_deploy brings them ' +
      'back). To change a few pages of a site, use merge. SQLite databases are never touched. With draft: true the ' +
      'deploy is only served at its preview URL until publish_deploy. Answers the live or preview URL and how many ' +
      'files were added, changed and removed.',
    access: 'destructive',
    input: {
      files: z
        .array(
          z.object({
            path: z.string().min(1).max(1024).describe('Path in the site, e.g. index.html or css/site.css'),
            ...content,
          }),
        )
        .min(1)
        .max(MAX_INLINE_FILES)
        .describe('The files to deploy (mode replace: every file of the site)'),
      mode,
      removed,
      draft: z.boolean().default(false).describe('Keep it as a preview instead of going live'),
      message: z.string().max(500).optional().describe('What this deploy changes, kept in its history'),
    },
    output: {
      ...switchOutput,
      changes,
      uploaded: z.int().describe('Contents sent (the others were on the site already)'),
    },
    run: async ({ files, mode: m, removed: gone, draft, message }, api) => {
      const manifest: Record<string, string> = {};
      // Declared sizes: a file over its type's limit is refused, named, before a deploy exists.
      const sizes: Record<string, number> = {};
      const blobs = new Map<string, Buffer>();
      for (const file of files) {
        const bytes = bytesOf(file.content, file.encoding);
        const hash = sha(bytes);
        if (Object.hasOwn(manifest, file.path))
          throw new AppError('INVALID_REQUEST', { message: `files names ${file.path} twice` });
        manifest[file.path] = hash;
        sizes[file.path] = bytes.length;
        blobs.set(hash, bytes);
      }
      const created = await api.call<Json & { id: string; required: string[] }>('POST', '/api/v1/deploys', {
        json: { files: manifest, sizes, draft, message, ...baseOf(m, gone) },
        headers: createHeaders(),
      });
      const queue = bucketsOf(
        created.required.flatMap((hash) => {
          const bytes = blobs.get(hash);
          return bytes === undefined ? [] : [{ hash, bytes }];
        }),
      );
      const worker = async () => {
        for (let next = queue.shift(); next !== undefined; next = queue.shift())
          await sendBucket(api, created.id, next);
      };
      let done: Json;
      try {
        await Promise.all(Array.from({ length: Math.min(BUCKETS_AT_ONCE, queue.length) }, worker));
        done = await switched(api, created.id, 'finalize');
      } catch (err) {
        // A deploy this call cannot finish is cancelled, not left behind.
        await api.call('DELETE', idPath(created.id)).catch(() => undefined);
        throw err;
      }
      const deployed = done.deploy as Json;
      return result(SWITCHED, {
        ...done,
        changes: deployed.changes ?? null,
        uploaded: created.required.length,
      });
    },
  }),
  tool({
    name: 'deploy_manifest',
    feature: 'deploys',
    title: 'Start a deploy from a manifest of hashes (large sites)',
    description:
      'For sites too big to send inline: {path: sha256 of the bytes}, the whole site (mode replace) or the files to add or change (mode merge). Answers the deploy and the hashes the site does not have yet: send each with upload_blob, then finalize_deploy (or cancel_deploy). Same rules as deploy_files.',
    access: 'write',
    input: {
      files: z
        .record(z.string().min(1).max(1024), sha256)
        .describe('path → SHA-256 (lower-case hex) of the file bytes (mode replace: every file of the site)'),
      mode,
      removed,
      sizes: z
        .record(z.string().min(1).max(1024), z.int().min(0))
        .optional()
        .describe(
          'path → size in bytes: files over their limit are refused, named, before the deploy exists',
        ),
      draft: z.boolean().default(false).describe('Finalize as a preview instead of going live'),
      message: z.string().max(500).optional().describe('What this deploy changes, kept in its history'),
    },
    output: { deploy, required: z.array(z.string()).describe('Hashes to send with upload_blob') },
    run: async ({ files, mode: m, removed: gone, sizes, draft, message }, api) => {
      const created = await api.call<Json & { required: string[] }>('POST', '/api/v1/deploys', {
        json: { files, sizes, draft, message, ...baseOf(m, gone) },
        headers: createHeaders(),
      });
      return result('the deploy started and the hashes it still needs (upload_blob)', {
        deploy: deployFields(created),
        required: created.required,
      });
    },
  }),
  tool({
    name: 'upload_blob',
    feature: 'deploys',
    title: 'Send one content of a deploy started with deploy_manifest',
    description:
      'The bytes of one hash the deploy asked for (text or base64; at most 10 MB, 50 MB for videos). Their SHA-256 must be in the manifest.',
    access: 'write',
    idempotent: true,
    input: { deploy_id: deployId, ...content },
    output: {
      hash: z.string(),
      size: z.int(),
      state: z.string(),
      remaining: z.int().describe('Hashes still to send'),
    },
    run: async ({ deploy_id, content: text, encoding }, api) => {
      const bytes = bytesOf(text, encoding);
      const answer = await api.call<Json>('PUT', idPath(deploy_id, `/files/${sha(bytes)}`), { bytes });
      return result('the content received and what the deploy still needs', {
        hash: answer.hash,
        size: answer.size,
        state: answer.state,
        remaining: answer.remaining,
      });
    },
  }),
  tool({
    name: 'finalize_deploy',
    feature: 'deploys',
    title: 'Finalize a deploy whose contents are all sent',
    description:
      'Switches the site to the deploy atomically (or keeps a draft as a preview). Answers the live or preview URL.',
    access: 'destructive',
    input: { deploy_id: deployId },
    output: switchOutput,
    run: async ({ deploy_id }, api) => result(SWITCHED, await switched(api, deploy_id, 'finalize')),
  }),
  tool({
    name: 'cancel_deploy',
    feature: 'deploys',
    title: 'Cancel an unfinished deploy (or delete one that is not live)',
    description:
      'Cancels a deploy started with deploy_manifest that will not be finished, so it does not linger (unfinished deploys also expire after some idle minutes). A draft or an earlier published deploy is deleted with its preview; the live deploy cannot be (restore or deploy another first).',
    access: 'destructive',
    input: { deploy_id: deployId },
    output: { cancelled: z.string() },
    run: async ({ deploy_id }, api) => {
      await api.call('DELETE', idPath(deploy_id));
      return result('the id of the deploy cancelled', { cancelled: deploy_id });
    },
  }),
  tool({
    name: 'publish_deploy',
    feature: 'deploys',
    title: 'Make a draft deploy live',
    description: 'Publishes a finalized draft (its preview becomes the site), atomically.',
    access: 'destructive',
    input: { deploy_id: deployId },
    output: switchOutput,
    run: async ({ deploy_id }, api) => result(SWITCHED, await switched(api, deploy_id, 'publish')),
  }),
  tool({
    name: 'restore_deploy',
    feature: 'deploys',
    title: 'Roll back: make an earlier deploy live again',
    description:
      'Instant rollback to any retained published deploy (metadata only, nothing re-uploaded). Changes made with write_file since the live deploy are first kept as a deploy of their own.',
    access: 'destructive',
    input: { deploy_id: deployId },
    output: switchOutput,
    run: async ({ deploy_id }, api) => result(SWITCHED, await switched(api, deploy_id, 'restore')),
  }),
  tool({
    name: 'list_deploys',
    feature: 'deploys',
    title: "The site's deploys, newest first",
    description: 'Deploy history (id, state, live, files, bytes, created, preview URL), paged.',
    access: 'read',
    input: pageArgs(50, 20),
    output: {
      live_deploy_id: z.string().nullable(),
      live_changed_since_deploy: z.boolean(),
      deploys: z.array(deploy),
      pagination,
    },
    run: async ({ page, per_page }, api) => {
      const answer = await api.call<Json>('GET', '/api/v1/deploys', { query: { page, per_page } });
      return result("a page of the site's deploys, newest first", {
        live_deploy_id: answer.live_deploy_id,
        live_changed_since_deploy: answer.live_changed_since_deploy,
        deploys: answer.deploys,
        pagination: withNextPage(answer.pagination as Json),
      });
    },
  }),
  tool({
    name: 'get_deploy',
    feature: 'deploys',
    title: 'One deploy and a page of its files',
    description: 'The deploy and its manifest (path, hash, size, content type), paged by path.',
    access: 'read',
    input: { deploy_id: deployId, ...pageArgs(200, 100) },
    output: {
      deploy,
      files: z.array(z.looseObject({ path: z.string(), hash: z.string() })),
      pagination,
    },
    run: async ({ deploy_id, page, per_page }, api) => {
      const answer = await api.call<Json>('GET', idPath(deploy_id), { query: { page, per_page } });
      return result('the deploy and a page of its files', {
        deploy: answer.deploy,
        files: answer.files,
        pagination: withNextPage(answer.pagination as Json),
      });
    },
  }),
];
