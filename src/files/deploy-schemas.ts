import { z } from 'zod';
import { queryInt } from '../http/index.js';
import { MAX_DEPLOY_FILES, MAX_DEPLOY_MESSAGE } from './deploys.js';
import { DEPLOY_CLIENTS } from './deploy-client.js';
import { siteIdQuery } from './schemas.js';

const SHA256 = /^[0-9a-f]{64}$/;
export const sha256 = z
  .string()
  .regex(SHA256, 'must be a SHA-256 in lower-case hex (64 characters)')
  .describe('SHA-256 of the bytes, lower-case hex');

export const deployIdParam = {
  type: 'string',
  pattern: '^[a-z2-7]{12}$',
  description: 'The deploy id (12 characters, a-z and 2-7)',
};
export const sha256Param = { type: 'string', pattern: '^[0-9a-f]{64}$', description: 'SHA-256 of the blob' };

/** POST /api/v1/deploys's body; its paths name the server's file types (typedSchemas). */
export const createBodyOf = (manifestPath: z.ZodType<string>) =>
  z.strictObject({
    files: z
      .record(manifestPath, sha256)
      .refine((f) => Object.keys(f).length <= MAX_DEPLOY_FILES, {
        message: `may name at most ${MAX_DEPLOY_FILES} files`,
      })
      .describe(
        'The whole site as path → SHA-256 of the bytes. Paths follow the rules of POST /api/v1/files/upload (videos: those of POST /api/v1/videos/upload). SQLite databases of the site are never part of a manifest and stay as they are.',
      ),
    draft: z
      .boolean()
      .optional()
      .describe('A draft is not published by finalize: it is served at its preview host only'),
    base: z
      .enum(['none', 'live'])
      .optional()
      .describe(
        'none (the default): `files` is the whole new site, live files it does not list are gone from it. live: `files` is laid over the live file set (what the site serves now): live files it does not list are kept, except those `removed` names',
      ),
    removed: z
      .array(manifestPath)
      .max(MAX_DEPLOY_FILES)
      .optional()
      .describe(
        'With base live only: live paths to drop, each a file or a folder (everything in it goes). A path both in files and here is a 400; a path the live site does not have is ignored',
      ),
    sizes: z
      .record(manifestPath, z.int().min(0).max(Number.MAX_SAFE_INTEGER))
      .optional()
      .describe(
        "Optional: the size in bytes of some or all files, by path. Checked before the deploy exists: a file over its type's limit (10 MB; 50 MB for a video) is a 400 naming every such file, and sizes over the storage left a 403; nothing is created then. The uploads are still checked for real",
      ),
    message: z
      .string()
      .max(MAX_DEPLOY_MESSAGE)
      // PostgreSQL text holds no NUL character.
      .refine((v) => !v.includes('\u0000'), 'must not contain NUL characters')
      .meta({ pattern: '^[^\\u0000]*$' })
      .optional()
      .describe(
        `What this deploy is (a commit message), at most ${MAX_DEPLOY_MESSAGE} characters, no NUL character`,
      ),
  });

/** POST /api/v1/deploys's Idempotency-Key (draft-ietf-httpapi-idempotency-key-header), documented. */
export const idempotencyKeyHeader = (max: number) => ({
  description:
    `Optional, 1 to ${max} visible ASCII characters (a UUID, say; taken as sent, quotes included): makes the create safe to send again when its answer was lost. ` +
    'The first request with a key creates the deploy and keeps the key with it. The same key with the same request (the body as the server reads it: key order and defaults do not count) answers that deploy again, as it is now (`state`, and `required`: the hashes it still lacks), with `Idempotent-Replayed: true`, and creates nothing. ' +
    'The same key with another body is 422 `Idempotency key reused`. Requests with one new key at once (on any replica) make one deploy: the others wait for it and answer its replay. ' +
    'Keys are per site and live as long as their deploy: once it is cancelled, expired or pruned, the key creates a new deploy. A malformed key (empty, longer, spaces, beyond ASCII, sent twice) is 400.',
  schema: { type: 'string', minLength: 1, maxLength: max, pattern: '^[!-~]+$' },
});
export const idempotentReplayedHeader = {
  description:
    '`true` when the answer is the replay of an earlier create with the same Idempotency-Key (absent otherwise)',
  schema: { type: 'string', const: 'true' },
};

export const siteOnlyQuery = z.strictObject({ site_id: siteIdQuery });
export const pageQuery = (max: number) =>
  z.strictObject({
    page: queryInt({ min: 1, max: 999_999_999_999_999, default: 1 }),
    per_page: queryInt({ min: 1, max, default: max }),
    site_id: siteIdQuery,
  });

const state = z
  .enum(['uploading', 'ready', 'draft', 'published'])
  .describe(
    'uploading: blobs are missing; ready: all blobs are there, not finalized; draft: finalized as a draft; published: went live at least once',
  );

export const deploy = z.object({
  id: z.string(),
  site_id: z.int().describe('The site (storage folder) it belongs to'),
  state,
  draft: z.boolean(),
  source: z
    .enum(['api', 'files_api'])
    .describe('files_api: what the files API had left live, recorded at the next switch'),
  live: z.boolean().describe("Its manifest is the site's live file set (see live_changed_since_deploy)"),
  file_count: z.int(),
  bytes: z.int().describe('Sum of the sizes known so far (all of them once ready)'),
  key_prefix: z.string().nullable().describe('The first characters of the API key that made it'),
  client: z
    .enum(DEPLOY_CLIENTS)
    .nullable()
    .describe(
      'What made it: console (a signed-in browser session), cli (User-Agent hostplane-cli/…), mcp (the MCP tools), api (any other client); null for files_api records and deploys made before this was recorded',
    ),
  created_at: z.string(),
  finalized_at: z.string().nullable(),
  published_at: z.string().nullable(),
  message: z.string().nullable().describe('The message it was created with (null: none)'),
  changes: z
    .object({
      added: z.int().describe('Paths the live file set does not have'),
      changed: z.int().describe('Paths the live file set has with other bytes'),
      removed: z.int().describe('Live paths it does not have'),
    })
    .nullable()
    .describe(
      'Against the live file set when it was created, then when it last went live or was finalized (null: a files_api record, or made before this was counted)',
    ),
  preview_url: z
    .string()
    .nullable()
    .describe(
      'https://<id>--<slug>.<sites domain>: the deploy as it would be live (null when the label would exceed 63 characters)',
    ),
});

export const createResponse = deploy.extend({
  success: z.literal(true),
  required: z.array(z.string()).describe('The hashes to upload with PUT /api/v1/deploys/{id}/files/{sha256}'),
});
export const uploadResponse = z.object({
  success: z.literal(true),
  hash: z.string(),
  size: z.int(),
  state,
  remaining: z.int().describe('Hashes still to upload'),
});
export const deployResponse = deploy.extend({ success: z.literal(true) });

/** The bulk upload's body, as documented: one file part per blob, named by its SHA-256. */
export const bulkMultipart = z
  .record(sha256, z.string().meta({ format: 'binary' }).describe("The blob's bytes"))
  .describe(
    'One file part per blob (a filename, or Content-Type: application/octet-stream), its field name the SHA-256 of its bytes',
  );
export const bulkResponse = z.object({
  success: z.literal(true),
  received: z.int().describe('Blobs this request stored'),
  already_present: z
    .int()
    .describe(
      'Parts whose blob the deploy had already (sent before, or twice in this request): verified, not stored again',
    ),
  missing: z
    .array(z.string())
    .describe(
      'Hashes the deploy still lacks after this request, sorted (at most 1,000: what one more request may carry)',
    ),
  state,
  remaining: z.int().describe('How many hashes the deploy still lacks in all'),
});

const pagination = z.object({
  current_page: z.int(),
  per_page: z.int(),
  total_items: z.int(),
  total_pages: z.int(),
  has_more: z.boolean(),
  is_last_page: z.boolean(),
});

export const listResponse = z.object({
  success: z.literal(true),
  live_deploy_id: z.string().nullable(),
  live_changed_since_deploy: z
    .boolean()
    .describe(
      'The files API changed the live files since the live deploy: the next switch records them as a files_api deploy',
    ),
  pagination,
  deploys: z.array(deploy),
});

export const getResponse = z.object({
  success: z.literal(true),
  deploy,
  pagination,
  files: z.array(
    z.object({ path: z.string(), hash: z.string(), size: z.int().nullable(), content_type: z.string() }),
  ),
});
