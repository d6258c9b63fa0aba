import busboy from 'busboy';
import type { Readable } from 'node:stream';
import { Router, type Request, type Response } from 'express';
import { siteUrl, type Config } from '../config/config.js';
import { jsonBody } from '../http/body.js';
import { AppError, isAppError } from '../errors/index.js';
import type { RouteRegistry } from '../http/route.js';

import { formatBytes, percentage, siteForRequest } from '../platform/index.js';
import type { Platform, Site } from '../platform/index.js';
import { MAX_FILE_BYTES, MAX_VIDEO_BYTES, type FilesService, type StagedBlob } from './service.js';
import { uploadExtensions, videoExtensions } from './file-types.js';
import { extensionOf, normalizeSitePath } from './paths.js';
import * as s from './schemas.js';

const NEAR_LIMIT_PERCENT = 80;
// A flat character-class loop: a grouped `(?:…{4})*` overflows V8's regex stack on megabytes of input.
const BASE64_CHARS = /^[A-Za-z0-9+/]*={0,2}$/;
const errors = (extra: Record<number, string> = {}) => ({
  400: { description: 'Invalid input', schema: s.errorBody },
  401: { description: 'Missing or invalid API key', schema: s.errorBody },
  ...Object.fromEntries(Object.entries(extra).map(([k, d]) => [k, { description: d, schema: s.errorBody }])),
});

const tooLarge = () => new AppError('FILE_TOO_LARGE', { maxBytes: MAX_FILE_BYTES, what: 'file' });

function fileUrl(config: Config, site: Site, sitePath: string): string {
  return `${siteUrl(config, site.slug)}/${sitePath.split('/').map(encodeURIComponent).join('/')}`;
}

function assertExtension(sitePath: string, allowed: Set<string>, field: string, hint: string): void {
  const ext = extensionOf(sitePath);
  if (!allowed.has(ext)) {
    throw new AppError('INVALID_FILE_TYPE', {
      message: `${field} has ${ext ? `the extension .${ext}` : 'no extension'}, which is not allowed. Allowed: ${[...allowed].join(', ')}.${hint}`,
    });
  }
}

function decodeContent(content: string, encoding: string | undefined): Buffer {
  if (encoding !== 'base64') return Buffer.from(content, 'utf8');
  const compact = content.replace(/\s+/g, '');
  if (compact.length % 4 !== 0 || !BASE64_CHARS.test(compact)) {
    throw new AppError('INVALID_CONTENT', { message: 'content is not valid base64' });
  }
  return Buffer.from(compact, 'base64');
}

export function filesRoutes(deps: {
  config: Config;
  platform: Platform;
  files: FilesService;
  registry: RouteRegistry;
}): Router {
  const { config, platform, files, registry } = deps;
  const router = Router();
  const tags = ['Files'];
  const smallJson = jsonBody('64kb');

  registry.add(router, {
    method: 'get',
    path: '/api/v1/files/list',
    summary: 'List files and folders of the site',
    tags,
    auth: 'apiKeyOrSession',
    query: s.listQuery,
    responses: { 200: { description: 'One page of entries', schema: s.listResponse }, ...errors() },
    handler: async ({ req, res, query }) => {
      const site = await siteForRequest(req, platform, query.site_id);
      const { total, entries } = await files.list(site.id, query.page, query.per_page);
      const totalPages = Math.max(1, Math.ceil(total / query.per_page));
      res.json({
        success: true,
        storage_folder: {
          slug: site.slug,
          name: site.name,
          file_count: site.fileCount,
          storage_used: site.storageBytes,
          storage_used_formatted: formatBytes(site.storageBytes),
        },
        pagination: {
          current_page: query.page,
          per_page: query.per_page,
          total_items: total,
          total_pages: totalPages,
          has_more: query.page < totalPages,
          is_last_page: query.page >= totalPages,
        },
        files: entries.map((e) => ({
          path: e.path,
          name: e.name,
          type: e.type,
          size: e.size,
          size_formatted: formatBytes(e.size),
          url: e.type === 'file' ? fileUrl(config, site, e.path) : null,
          depth: e.depth,
          parent: e.parent,
        })),
      });
    },
  });

  registry.add(router, {
    method: 'get',
    path: '/api/v1/files/get',
    summary: 'Read one file (text as UTF-8, other files as base64)',
    tags,
    auth: 'apiKeyOrSession',
    query: s.pathQuery,
    responses: {
      200: { description: 'The file', schema: s.getResponse },
      ...errors({ 404: 'No such file' }),
    },
    handler: async ({ req, res, query }) => {
      const sitePath = normalizeSitePath(query.path);
      const site = await siteForRequest(req, platform, query.site_id);
      const file = await files.read(site.id, sitePath);
      res.json({
        success: true,
        path: sitePath,
        content: file.content,
        encoding: file.encoding,
        size: file.size,
        url: fileUrl(config, site, sitePath),
      });
    },
  });

  registry.add(router, {
    method: 'post',
    path: '/api/v1/files/upload',
    summary: 'Create or overwrite a file; missing parent folders are created',
    tags,
    auth: 'apiKeyOrSession',
    // base64 of 10 MB plus JSON framing; the decoded size is checked exactly below.
    middleware: [jsonBody('15mb', tooLarge)],
    query: s.siteQuery,
    body: s.uploadBody,
    responses: {
      200: { description: 'Stored', schema: s.uploadResponse },
      ...errors({ 403: 'File or storage limit exceeded' }),
    },
    handler: async ({ req, res, query, body }) => {
      const sitePath = normalizeSitePath(body.path);
      assertExtension(
        sitePath,
        uploadExtensions,
        'path',
        videoExtensions.has(extensionOf(sitePath)) ? ' Upload videos with POST /api/v1/videos/upload.' : '',
      );
      const bytes = decodeContent(body.content, body.encoding);
      if (bytes.length > MAX_FILE_BYTES) throw tooLarge();
      const site = await siteForRequest(req, platform, query.site_id);
      const stored = await files.upload(site.id, sitePath, bytes);
      res.json({
        success: true,
        message: 'File uploaded successfully',
        path: stored.path,
        size: stored.size,
        url: fileUrl(config, site, stored.path),
      });
    },
  });

  registry.add(router, {
    method: 'post',
    path: '/api/v1/files/rename',
    summary: 'Rename or move a file; the public URL changes',
    tags,
    auth: 'apiKeyOrSession',
    middleware: [smallJson],
    query: s.siteQuery,
    body: s.renameBody,
    responses: {
      200: { description: 'Renamed', schema: s.messageResponse },
      ...errors({ 404: 'No such file', 409: 'Something already exists at new_path' }),
    },
    handler: async ({ req, res, query, body }) => {
      const oldPath = normalizeSitePath(body.old_path, 'old_path');
      const newPath = normalizeSitePath(body.new_path, 'new_path');
      // A rename keeps the kind of file: a page cannot become a video, nor a video a page.
      const isVideo = videoExtensions.has(extensionOf(oldPath));
      assertExtension(newPath, isVideo ? videoExtensions : uploadExtensions, 'new_path', '');
      const site = await siteForRequest(req, platform, query.site_id);
      await files.rename(site.id, oldPath, newPath);
      res.json({
        success: true,
        message: `Renamed ${oldPath} to ${newPath}`,
        old_path: oldPath,
        new_path: newPath,
        url: fileUrl(config, site, newPath),
      });
    },
  });

  registry.add(router, {
    method: 'delete',
    path: '/api/v1/files/delete',
    summary: 'Delete a file immediately (no trash)',
    tags,
    auth: 'apiKeyOrSession',
    query: s.pathQuery,
    responses: {
      200: { description: 'Deleted', schema: s.messageResponse },
      ...errors({ 404: 'No such file' }),
    },
    handler: async ({ req, res, query }) => {
      const sitePath = normalizeSitePath(query.path);
      const site = await siteForRequest(req, platform, query.site_id);
      await files.delete(site.id, sitePath);
      res.json({ success: true, message: `Deleted ${sitePath}`, path: sitePath });
    },
  });

  registry.add(router, {
    method: 'post',
    path: '/api/v1/files/create-folder',
    summary: 'Create a folder (parents as needed)',
    tags: ['Folders'],
    auth: 'apiKeyOrSession',
    middleware: [smallJson],
    query: s.siteQuery,
    body: s.folderBody,
    responses: {
      200: { description: 'Created, or already there', schema: s.messageResponse },
      ...errors({ 409: 'A file exists at that path' }),
    },
    handler: async ({ req, res, query, body }) => {
      const folder = normalizeSitePath(body.path);
      const site = await siteForRequest(req, platform, query.site_id);
      const created = await files.createFolder(site.id, folder);
      res.json({
        success: true,
        message: created ? `Folder ${folder} created` : `Folder ${folder} already exists`,
        path: folder,
      });
    },
  });

  registry.add(router, {
    method: 'post',
    path: '/api/v1/files/rename-folder',
    summary: 'Move a folder and everything in it',
    tags: ['Folders'],
    auth: 'apiKeyOrSession',
    middleware: [smallJson],
    query: s.siteQuery,
    body: s.renameBody,
    responses: {
      200: { description: 'Moved', schema: s.messageResponse },
      ...errors({ 404: 'No such folder', 409: 'Something already exists at new_path' }),
    },
    handler: async ({ req, res, query, body }) => {
      const oldPath = normalizeSitePath(body.old_path, 'old_path');
      const newPath = normalizeSitePath(body.new_path, 'new_path');
      const site = await siteForRequest(req, platform, query.site_id);
      const moved = await files.renameFolder(site.id, oldPath, newPath);
      res.json({
        success: true,
        message: `Moved folder ${oldPath} to ${newPath} (${moved} files)`,
        old_path: oldPath,
        new_path: newPath,
        files_moved: moved,
      });
    },
  });

  registry.add(router, {
    method: 'delete',
    path: '/api/v1/files/delete-folder',
    summary: 'Delete a folder and everything in it (permanent)',
    tags: ['Folders'],
    auth: 'apiKeyOrSession',
    query: s.pathQuery,
    responses: {
      200: { description: 'Deleted', schema: s.messageResponse },
      ...errors({ 404: 'No such folder' }),
    },
    handler: async ({ req, res, query }) => {
      const folder = normalizeSitePath(query.path);
      const site = await siteForRequest(req, platform, query.site_id);
      const deleted = await files.deleteFolder(site.id, folder);
      res.json({
        success: true,
        message: `Deleted folder ${folder} (${deleted} files)`,
        path: folder,
        files_deleted: deleted,
      });
    },
  });

  registry.add(router, {
    method: 'get',
    path: '/api/v1/files/storage-limits',
    summary: "File count and storage against the plan's limits",
    tags: ['Storage'],
    auth: 'apiKeyOrSession',
    query: s.siteQuery,
    responses: { 200: { description: 'Usage and limits', schema: s.storageLimitsResponse }, ...errors() },
    handler: async ({ req, res, query }) => {
      const site = await siteForRequest(req, platform, query.site_id);
      const usage = await platform.getUsage(site.id);
      if (!usage) throw new AppError('NOT_FOUND', { message: 'Site not found' });
      const { plan } = usage;
      const { fileCount, storageBytes } = usage.site;
      const filesAvailable = plan.maxFiles === null ? null : Math.max(0, plan.maxFiles - fileCount);
      const bytesAvailable =
        plan.maxStorageBytes === null ? null : Math.max(0, plan.maxStorageBytes - storageBytes);
      const filesPct = percentage(fileCount, plan.maxFiles);
      const bytesPct = percentage(storageBytes, plan.maxStorageBytes);
      res.json({
        success: true,
        plan: { name: plan.name, type: plan.type },
        usage: {
          files: {
            current: fileCount,
            limit: plan.maxFiles,
            available: filesAvailable,
            percentage: filesPct,
          },
          storage: {
            current: storageBytes,
            limit: plan.maxStorageBytes,
            available: bytesAvailable,
            current_formatted: formatBytes(storageBytes),
            limit_formatted: plan.maxStorageBytes === null ? 'Unlimited' : formatBytes(plan.maxStorageBytes),
            available_formatted: bytesAvailable === null ? 'Unlimited' : formatBytes(bytesAvailable),
            percentage: bytesPct,
          },
        },
        warnings: {
          files_near_limit: filesPct >= NEAR_LIMIT_PERCENT,
          storage_near_limit: bytesPct >= NEAR_LIMIT_PERCENT,
        },
      });
    },
  });

  registry.add(router, {
    method: 'get',
    path: '/api/v1/hosting-info',
    summary: "The site's address and usage",
    tags: ['Storage'],
    auth: 'apiKeyOrSession',
    query: s.siteQuery,
    responses: { 200: { description: 'Hosting info', schema: s.hostingInfoResponse }, ...errors() },
    handler: async ({ req, res, query }) => {
      const site = await siteForRequest(req, platform, query.site_id);
      res.json({
        success: true,
        subdomain: site.slug,
        base_url: siteUrl(config, site.slug),
        storage_usage: { files_count: site.fileCount, storage_used: formatBytes(site.storageBytes) },
      });
    },
  });

  registry.add(router, {
    method: 'post',
    path: '/api/v1/videos/upload',
    summary: 'Upload a video (multipart/form-data, streamed; MP4, WebM, OGG, MOV; 50 MB)',
    tags: ['Videos'],
    auth: 'apiKeyOrSession',
    query: s.siteQuery,
    multipart: s.videoMultipart,
    responses: {
      200: { description: 'Stored', schema: s.uploadResponse },
      ...errors({ 403: 'Storage or file limit exceeded', 404: 'Upload aborted', 500: 'Upload failed' }),
    },
    handler: async ({ req, res, query }) => {
      const site = await siteForRequest(req, platform, query.site_id);
      const receiveAndCommit = async () => {
        const { sitePath, staged } = await receiveVideo(req, res, files);
        return files.commitStaged(site.id, sitePath, staged);
      };
      // Spec 4.4: a failure on our side is 500 "Upload failed" (the cause is logged, not sent).
      const stored = await receiveAndCommit().catch((err: unknown) => {
        if (isAppError(err)) throw err;
        throw new AppError('UPLOAD_FAILED', {}, { cause: err });
      });
      res.json({
        success: true,
        message: 'Video uploaded successfully',
        path: stored.path,
        size: stored.size,
        url: fileUrl(config, site, stored.path),
      });
    },
  });

  return router;
}

const videoTooLarge = () => new AppError('VIDEO_TOO_LARGE', { maxBytes: MAX_VIDEO_BYTES });

const malformed = () =>
  new AppError('INVALID_REQUEST', { message: 'Malformed multipart/form-data request.' });

function validVideoPath(raw: string | undefined): string {
  if (raw === undefined || raw === '')
    throw new AppError('MISSING_PATH', { message: 'The "path" field is required.' });
  const sitePath = normalizeSitePath(raw);
  assertExtension(sitePath, videoExtensions, 'path', '');
  return sitePath;
}

/**
 * Reads a multipart video upload: the `file` part streams straight into a staged blob while the
 * request arrives; `path` may come before or after it. Resolves once the staged blob is complete.
 */
function receiveVideo(
  req: Request,
  res: Response,
  files: FilesService,
): Promise<{ sitePath: string; staged: StagedBlob }> {
  return new Promise((resolve, reject) => {
    if (!req.is('multipart/form-data')) {
      reject(
        new AppError('NO_FILE', {
          message: 'Send the video as multipart/form-data with "file" and "path" fields.',
        }),
      );
      return;
    }
    let parser: busboy.Busboy;
    try {
      parser = busboy({
        headers: req.headers,
        // busboy reports `limit` on reaching fileSize, so one byte of headroom lets exactly 50 MB through.
        limits: { fileSize: MAX_VIDEO_BYTES + 1, files: 1, fields: 10, fieldSize: 4096 },
      });
    } catch {
      reject(malformed());
      return;
    }
    let rawPath: string | undefined;
    let staging: Promise<StagedBlob> | undefined;
    let truncated = false;
    let earlyError: unknown;
    let fileStream: Readable | undefined;
    let settled = false;
    const fail = (err: unknown) => {
      if (settled) return;
      settled = true;
      req.unpipe(parser);
      req.resume();
      // Ending the part stream makes the staging write fail and remove its temporary blob.
      fileStream?.destroy(new Error('upload abandoned'));
      parser.destroy();
      staging?.then((st) => files.discardStaged(st)).catch(() => undefined);
      reject(err);
    };

    parser.on('field', (name, value) => {
      if (name === 'path') rawPath = value;
    });
    parser.on('file', (name, stream) => {
      // A body that ends mid-part errors this stream; the parser's own error event answers it.
      stream.on('error', () => undefined);
      if (name !== 'file' || staging) {
        stream.resume();
        return;
      }
      if (rawPath !== undefined) {
        try {
          validVideoPath(rawPath);
        } catch (err) {
          earlyError = err;
          stream.resume();
          return;
        }
      }
      stream.on('limit', () => (truncated = true));
      fileStream = stream;
      staging = files.stage(stream);
      staging.catch(() => undefined);
    });
    parser.on('error', () => fail(malformed()));
    parser.on('close', () => {
      void (async () => {
        if (settled) return;
        if (earlyError) return fail(earlyError);
        if (!staging) {
          if (rawPath !== undefined) validVideoPath(rawPath);
          return fail(
            new AppError('NO_FILE', { message: 'No file was uploaded: send it in the "file" field.' }),
          );
        }
        const staged = await staging;
        if (truncated) return fail(videoTooLarge());
        let sitePath: string;
        try {
          sitePath = validVideoPath(rawPath);
        } catch (err) {
          return fail(err);
        }
        settled = true;
        resolve({ sitePath, staged });
      })().catch(fail);
    });
    req.on('aborted', () =>
      fail(new AppError('UPLOAD_ABORTED', { message: 'The upload was aborted before it completed.' })),
    );
    res.on('close', () => {
      if (!res.writableFinished && !settled)
        fail(new AppError('UPLOAD_ABORTED', { message: 'The client went away.' }));
    });
    req.pipe(parser);
  });
}
