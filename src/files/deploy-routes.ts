import { createHash } from 'node:crypto';
import { Transform, type Readable } from 'node:stream';
import type { Request, RequestHandler, Router } from 'express';
import type { Config } from '../config/index.js';
import { AppError, type ErrorCode } from '../errors/index.js';
import { jsonBody, paginationJson, type RouteRegistry } from '../http/index.js';
import { siteForRequest, type Platform, type Site } from '../platform/index.js';
import type { Deploy, DeploysService } from './deploys.js';
import { MAX_MANIFEST_BYTES } from './deploys.js';
import * as s from './deploy-schemas.js';
import { typedSchemas } from './schemas.js';
import { deployDocs } from './deploy-docs.js';
import { deployClientOf } from './deploy-client.js';
import { deployJson } from './deploy-json.js';
import { idempotencyKeyOf, MAX_IDEMPOTENCY_KEY } from './deploy-idempotency.js';
import { bulkPrecheck, MAX_BULK_BYTES, MAX_BULK_PARTS, receiveBulk } from './deploy-bulk.js';
import { MAX_FILE_BYTES, type FilesService } from './service.js';
import { tooLargeFor } from './upload-rules.js';

const siteScoped: ErrorCode[] = ['KEY_SCOPE', 'NOT_FOUND'];
const SHA256 = /^[0-9a-f]{64}$/;

/** Passes bytes through, failing once more than `limit` went by. */
function limited(limit: number, tooBig: () => AppError): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      seen += chunk.length;
      done(seen > limit ? tooBig() : null, chunk);
    },
  });
}

async function readAll(body: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export function deployRoutes(deps: {
  config: Config;
  platform: Platform;
  files: FilesService;
  deploys: DeploysService;
  registry: RouteRegistry;
  router: Router;
  admitBlob: RequestHandler;
  admitBulk: RequestHandler;
}): void {
  const { config, platform, files, deploys, registry, router, admitBlob, admitBulk } = deps;
  const tags = ['Deploys'];
  const small = jsonBody('16kb');
  const params = { id: s.deployIdParam };
  const createBody = s.createBodyOf(typedSchemas(files.types).manifestPath);

  const answer = async (site: Site, d: Deploy) => ({
    success: true as const,
    ...deployJson(config, site, d, await deploys.liveDeployId(site.id)),
  });

  registry.add(router, {
    method: 'post',
    path: '/api/v1/deploys',
    summary: 'Create a deploy from a manifest; answers the hashes to upload',
    description:
      'The whole site as `{files: {path: sha256}}`, or with `base: "live"` the files to add or change over the live site (with `removed` for the paths to drop). The answer lists the hashes the site does not have yet (`required`): upload each with `PUT /api/v1/deploys/{id}/files/{sha256}`, then `POST /api/v1/deploys/{id}/finalize`; `changes` counts the paths added, changed and removed against the live site. ' +
      'Declared `sizes` are checked before the deploy exists. A site holds at most 20 unfinished deploys: a create beyond them deletes the least recently active one (a deploy nobody touches for 15 minutes expires anyway; `DELETE /api/v1/deploys/{id}` cancels one). ' +
      'A hash counts as present only when this site already uses it (a live file or an uploaded blob of one of its deploys): bytes another site holds are never reused without being sent. ' +
      `At most ${MAX_MANIFEST_BYTES / 1024 / 1024} MB of manifest and 100,000 files (and the plan's file limit); SQLite databases of the site are never part of a manifest. ` +
      'With an `Idempotency-Key` header, a create whose answer was lost can be sent again: see the header.',
    tags,
    auth: 'apiKeyOrSession',
    errors: [
      ...siteScoped,
      'INVALID_REQUEST',
      'INVALID_PATH',
      'INVALID_FILE_TYPE',
      'FILE_LIMIT',
      'STORAGE_LIMIT',
      'FILE_TOO_LARGE',
      'VIDEO_TOO_LARGE',
      'DEPLOY_FILES_TOO_LARGE',
      'IDEMPOTENCY_KEY_REUSED',
      'CONFLICT',
    ],
    middleware: [jsonBody(`${MAX_MANIFEST_BYTES / 1024 / 1024}mb`)],
    query: s.siteOnlyQuery,
    headers: { 'Idempotency-Key': s.idempotencyKeyHeader(MAX_IDEMPOTENCY_KEY) },
    body: createBody,
    requestExample: deployDocs.create.requestExample,
    responses: {
      200: {
        description:
          'Created (or, with `Idempotent-Replayed: true`, the deploy an earlier request with the key created)',
        schema: s.createResponse,
        headers: { 'Idempotent-Replayed': s.idempotentReplayedHeader },
        ...deployDocs.create.ok,
      },
    },
    handler: async ({ req, res, query, body }) => {
      const site = await siteForRequest(req, platform, query.site_id);
      const key = idempotencyKeyOf(req.headers['idempotency-key']);
      const usage = await platform.getUsage(site.id);
      if (!usage) throw new AppError('NOT_FOUND', { message: 'Site not found' });
      const client = deployClientOf(req.principal, req.headers['user-agent']);
      const created = await deploys.create(
        usage,
        req.principal,
        {
          files: body.files,
          draft: body.draft ?? false,
          base: body.base ?? 'none',
          removed: body.removed ?? [],
          sizes: body.sizes,
          message: body.message ?? null,
        },
        client,
        key,
      );
      if (created.replayed) res.setHeader('Idempotent-Replayed', 'true');
      res.json({ ...(await answer(site, created.deploy)), required: created.required });
    },
  });

  registry.add(router, {
    method: 'put',
    path: '/api/v1/deploys/:id/files/:sha256',
    summary: 'Upload one blob of a deploy, by its SHA-256',
    description:
      "The raw bytes (any Content-Type; no Content-Encoding). They must hash to the URL's SHA-256 (else 400 `Hash mismatch`, nothing stored) and the hash must be in the deploy's manifest. " +
      "At most 10 MB, or 50 MB when every path with this hash is a video (each path fits its own type's limit). Idempotent: a blob already received is answered at once.",
    tags,
    auth: 'apiKeyOrSession',
    params: { id: s.deployIdParam, sha256: s.sha256Param },
    errors: [
      ...siteScoped,
      'CONFLICT',
      'HASH_MISMATCH',
      'FILE_TOO_LARGE',
      'VIDEO_TOO_LARGE',
      'UNSUPPORTED_MEDIA_TYPE',
      'RATE_LIMITED',
      'CAPACITY',
    ],
    // No body is the empty blob (a site may hold empty files).
    rawBody: {
      contentType: 'application/octet-stream',
      description: 'The bytes of the blob (none: the empty blob)',
      required: false,
    },
    middleware: [admitBlob],
    query: s.siteOnlyQuery,
    requestExample: deployDocs.upload.requestExample,
    responses: {
      200: { description: 'Stored (or already there)', schema: s.uploadResponse, ...deployDocs.upload.ok },
    },
    handler: async ({ req, res, query }) => {
      const { id, sha256: hash } = req.params as { id: string; sha256: string };
      if (!SHA256.test(hash))
        throw new AppError('INVALID_REQUEST', { message: 'sha256 must be 64 lower-case hex characters' });
      const site = await siteForRequest(req, platform, query.site_id);
      const deploy = await deploys.get(site.id, id);
      if (deploy.state !== 'uploading' && deploy.state !== 'ready')
        throw new AppError('CONFLICT', {
          message: `Deploy ${id} is ${deploy.state}: it takes no more blobs`,
        });
      const { limit, narrowest, uploaded } = await deploys.blobLimit(deploy, hash);
      const tooBig = () => tooLargeFor(narrowest);
      const encoding = req.headers['content-encoding'];
      if (encoding !== undefined && encoding !== 'identity')
        throw new AppError('UNSUPPORTED_MEDIA_TYPE', {
          message: 'Send the bytes as they are (no Content-Encoding)',
        });
      if (Number(req.headers['content-length'] ?? 0) > limit) throw tooBig();
      if (uploaded !== null) {
        res.json({ success: true, hash, size: uploaded, ...(await deploys.progress(deploy.id)) });
        return;
      }
      const result = await receive(req, limit, tooBig, hash, (size, write) =>
        deploys.commitBlob(deploy, hash, size, write),
      );
      res.json({ success: true, hash, ...result });
    },
  });

  registry.add(router, {
    method: 'post',
    path: '/api/v1/deploys/:id/files',
    summary: 'Upload many blobs of a deploy in one request (multipart, one part per blob)',
    description:
      "`multipart/form-data`, one file part per blob (a filename, or `Content-Type: application/octet-stream`) whose field name is the blob's SHA-256 (64 lower-case hex) and whose body is its raw bytes. " +
      `At most ${MAX_BULK_PARTS} parts and ${MAX_BULK_BYTES / 1024 / 1024} MB per request (framing included; a larger Content-Length is 413 before the body is read); each blob within the single PUT's limits (10 MB, 50 MB when every path with its hash is a video). ` +
      'Parts are read in order, each hashed as it streams and checked against its name. The first bad part ends the request: a name that is not a SHA-256 or not in the manifest is 400, bytes that hash otherwise 400 `Hash mismatch` (`expected`, `actual`, and `received`: the blobs stored before it), a blob over its limit 400 `File too large`, one over the storage of unpublished deploys 403. ' +
      'Blobs fully received and verified before a bad part stay stored (content-addressed, idempotent): send the rest again. A part whose blob the deploy has already (or a second part with the same name) is verified and counted in `already_present`. ' +
      'Answers how many blobs were stored, and `missing`: the hashes the deploy still lacks (up to 1,000), to send next. One request counts once against the upload byte budget.',
    tags,
    auth: 'apiKeyOrSession',
    params,
    errors: [
      ...siteScoped,
      'CONFLICT',
      'HASH_MISMATCH',
      'FILE_TOO_LARGE',
      'VIDEO_TOO_LARGE',
      'STORAGE_LIMIT',
      'PAYLOAD_TOO_LARGE',
      'UNSUPPORTED_MEDIA_TYPE',
      'UPLOAD_ABORTED',
      'RATE_LIMITED',
      'CAPACITY',
    ],
    middleware: [bulkPrecheck, admitBulk],
    query: s.siteOnlyQuery,
    multipart: s.bulkMultipart,
    requestExample: deployDocs.bulk.requestExample,
    responses: { 200: { description: 'Stored', schema: s.bulkResponse, ...deployDocs.bulk.ok } },
    handler: async ({ req, res, query }) => {
      const { id } = req.params as { id: string };
      const site = await siteForRequest(req, platform, query.site_id);
      const deploy = await deploys.get(site.id, id);
      if (deploy.state !== 'uploading' && deploy.state !== 'ready')
        throw new AppError('CONFLICT', {
          message: `Deploy ${id} is ${deploy.state}: it takes no more blobs`,
        });
      res.json({ success: true, ...(await receiveBulk(req, res, deploy, deploys, files)) });
    },
  });

  /** Reads the body (in memory up to 10 MB, staged in the blob store above), checks its hash, commits. */
  async function receive(
    req: Request,
    limit: number,
    tooBig: () => AppError,
    hash: string,
    commit: (size: number, write: () => Promise<void>) => Promise<{ state: string; remaining: number }>,
  ) {
    const body = req.pipe(limited(limit, tooBig));
    req.on('error', (err) => body.destroy(err));
    const mismatch = (actual: string) => new AppError('HASH_MISMATCH', { expected: hash, actual });
    if (limit === MAX_FILE_BYTES) {
      const bytes = await readAll(body);
      const actual = createHash('sha256').update(bytes).digest('hex');
      if (actual !== hash) throw mismatch(actual);
      const done = await commit(bytes.length, () => deploys.putBlob(hash, bytes));
      return { size: bytes.length, ...done };
    }
    const staged = await files.stage(body);
    try {
      if (staged.hash !== hash) throw mismatch(staged.hash);
      const done = await commit(staged.size, () => deploys.copyBlob(staged.tmpKey, hash));
      return { size: staged.size, ...done };
    } finally {
      await files.discardStaged(staged).catch(() => undefined);
    }
  }

  const switchRoute = (action: 'finalize' | 'publish' | 'restore', summary: string, description: string) =>
    registry.add(router, {
      method: 'post',
      path: `/api/v1/deploys/:id/${action}`,
      summary,
      description,
      tags,
      auth: 'apiKeyOrSession',
      params,
      errors: [...siteScoped, 'CONFLICT', 'FILE_LIMIT', 'STORAGE_LIMIT', 'FOLDER_LIMIT', 'FILE_TOO_LARGE'],
      middleware: [small],
      query: s.siteOnlyQuery,
      requestExample: deployDocs.switch.requestExample,
      responses: { 200: { description: 'Done', schema: s.deployResponse, ...deployDocs.switch.ok } },
      handler: async ({ req, res, query }) => {
        const { id } = req.params as { id: string };
        const site = await siteForRequest(req, platform, query.site_id);
        const done =
          action === 'finalize'
            ? await deploys.finalize(site.id, id)
            : action === 'publish'
              ? await deploys.publish(site.id, id)
              : await deploys.restore(site.id, id);
        res.json(await answer(site, done));
      },
    });

  const switchNote =
    "The site's whole file set switches in one transaction (plan limits checked against the new set; SQLite databases stay); " +
    'the call returns once every edge replica serves the new version.';
  switchRoute(
    'finalize',
    'Finalize a ready deploy: publish it, or keep a draft as a preview',
    `Every blob must be uploaded (else 409). A deploy created with \`draft: true\` becomes a draft, served only at its preview host; any other goes live. ${switchNote}`,
  );
  switchRoute('publish', 'Publish a draft', `Makes a finalized draft live. ${switchNote}`);
  switchRoute(
    'restore',
    'Make an earlier published deploy live again (rollback)',
    `Metadata only: the deploy's blobs are kept while it is retained. ${switchNote} ` +
      'If the files API changed the live files since the live deploy, they are first recorded as a `files_api` deploy. ' +
      'Restoring the live deploy while the live files are still its own changes nothing (200, the deploy as it is): a repeated rollback is safe.',
  );

  registry.add(router, {
    method: 'delete',
    path: '/api/v1/deploys/:id',
    summary: 'Cancel an unfinished deploy, or delete one that is not live',
    description:
      'An unfinished deploy (`uploading`, `ready`) is cancelled: its uploads and finalize answer 404 from then on. A draft or a published deploy kept for rollback is deleted with its preview host. The live deploy is a 409: deploy or restore another first. ' +
      'Blobs no other file or deploy uses are freed by the orphan sweep.',
    tags,
    auth: 'apiKeyOrSession',
    params,
    errors: [...siteScoped, 'CONFLICT'],
    query: s.siteOnlyQuery,
    requestExample: deployDocs.switch.requestExample,
    responses: { 204: { description: 'Cancelled, or deleted' } },
    handler: async ({ req, res, query }) => {
      const { id } = req.params as { id: string };
      const site = await siteForRequest(req, platform, query.site_id);
      await deploys.remove(site.id, id);
      res.status(204).end();
    },
  });

  registry.add(router, {
    method: 'get',
    path: '/api/v1/deploys',
    summary: "The site's deploys, newest first",
    description:
      "Paged. Unfinished deploys expire once idle for 15 minutes (no upload; the operator may change it); published ones beyond the plan's retention (free 10, standard 50, premium 100, business 200, enterprise 500) are deleted, the live one always kept; finalized drafts have their own window (free 5, standard 10, premium 20, business 40, enterprise 100).",
    tags,
    auth: 'apiKeyOrSession',
    errors: siteScoped,
    query: s.pageQuery(100),
    requestExample: deployDocs.list.requestExample,
    responses: { 200: { description: 'One page', schema: s.listResponse, ...deployDocs.list.ok } },
    handler: async ({ req, res, query }) => {
      const site = await siteForRequest(req, platform, query.site_id);
      const listed = await deploys.list(site.id, query.page, query.per_page);
      res.json({
        success: true,
        live_deploy_id: listed.live ?? null,
        live_changed_since_deploy: listed.liveChanged,
        pagination: paginationJson(query.page, query.per_page, listed.total),
        deploys: listed.deploys.map((d) => deployJson(config, site, d, listed.live)),
      });
    },
  });

  registry.add(router, {
    method: 'get',
    path: '/api/v1/deploys/:id',
    summary: 'One deploy and a page of its manifest',
    description: 'The manifest is paged by path (byte order); `size` is null for a blob not uploaded yet.',
    tags,
    auth: 'apiKeyOrSession',
    params,
    errors: siteScoped,
    query: s.pageQuery(1000),
    requestExample: deployDocs.get.requestExample,
    responses: { 200: { description: 'The deploy', schema: s.getResponse, ...deployDocs.get.ok } },
    handler: async ({ req, res, query }) => {
      const { id } = req.params as { id: string };
      const site = await siteForRequest(req, platform, query.site_id);
      const d = await deploys.get(site.id, id);
      const entries = await deploys.manifest(id, query.page, query.per_page);
      res.json({
        success: true,
        deploy: deployJson(config, site, d, await deploys.liveDeployId(site.id)),
        pagination: paginationJson(query.page, query.per_page, d.fileCount),
        files: entries.map((e) => ({
          path: e.path,
          hash: e.hash,
          size: e.size,
          content_type: e.contentType,
        })),
      });
    },
  });
}
