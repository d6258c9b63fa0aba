import { Router } from 'express';
import { siteUrl, type Config } from '../config/index.js';
import { AppError, isAppError, outageError, type ErrorCode } from '../errors/index.js';
import { jsonBody, paginationJson, type RouteRegistry, type UploadAdmission } from '../http/index.js';
import { formatBytes, siteForRequest, type Platform } from '../platform/index.js';
import { fileDocs } from './route-docs.js';
import { MAX_FILE_BYTES, type FilesService } from './service.js';
import { receiveVideo } from './multipart.js';
import { extensionOf, normalizeSitePath } from './paths.js';
import { storageLimits } from './quota.js';
import * as s from './schemas.js';
import { assertExtension, fileUrl, tooLarge } from './upload-rules.js';
import { uploadBytes, uploadJsonBody } from './upload-body.js';
import { uploadAdmit } from './upload-admission.js';
import { deployRoutes } from './deploy-routes.js';
import { fileTypeRoutes } from './type-routes.js';
import type { DeploysService } from './deploys.js';

/** Every files route names a site: a key scoped elsewhere is 403, a session's unknown site_id 404. */
const siteScoped: ErrorCode[] = ['KEY_SCOPE', 'NOT_FOUND'];

export function filesRoutes(deps: {
  config: Config;
  platform: Platform;
  files: FilesService;
  deploys: DeploysService;
  registry: RouteRegistry;
  /** The process's upload budget (shared with /mcp's large bodies). */
  uploads: UploadAdmission;
}): Router {
  const { config, platform, files, deploys, registry } = deps;
  const router = Router();
  const typed = s.typedSchemas(files.types);
  const { upload: uploadExtensions, video: videoExtensions } = files.types;
  registry.components.set('UploadExtension', typed.uploadExtension);
  registry.components.set('VideoExtension', s.videoExtension);
  const tags = ['Files'];
  const smallJson = jsonBody('64kb');
  // Admitted by bytes before the body is read: a refused upload costs no memory (upload-admission.ts).
  const admit = uploadAdmit(deps.uploads);

  registry.add(router, {
    method: 'get',
    path: '/api/v1/files/list',
    summary: 'List files and folders of the site',
    ...fileDocs.list.doc,
    tags,
    auth: 'apiKeyOrSession',
    errors: siteScoped,
    query: s.listQuery,
    responses: { 200: { description: 'One page of entries', schema: s.listResponse, ...fileDocs.list.ok } },
    handler: async ({ req, res, query }) => {
      const site = await siteForRequest(req, platform, query.site_id);
      const { total, counters, entries } = await files.list(site.id, query.page, query.per_page);
      res.json({
        success: true,
        storage_folder: {
          slug: site.slug,
          name: site.name,
          file_count: counters.fileCount,
          storage_used: counters.storageBytes,
          storage_used_formatted: formatBytes(counters.storageBytes),
        },
        pagination: paginationJson(query.page, query.per_page, total),
        files: entries.map((e) => ({
          path: e.path,
          name: e.name,
          type: e.type,
          size: e.size,
          size_formatted: formatBytes(e.size),
          url: e.type === 'file' && !e.database ? fileUrl(config, site, e.path) : null,
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
    ...fileDocs.get.doc,
    tags,
    auth: 'apiKeyOrSession',
    errors: [...siteScoped, 'INVALID_PATH', 'FILE_TOO_LARGE', 'CONFLICT'],
    query: s.pathQuery,
    responses: {
      200: { description: 'The file', schema: s.getResponse, ...fileDocs.get.ok },
    },
    handler: async ({ req, res, query }) => {
      const sitePath = normalizeSitePath(query.path, 'path', 'existing');
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
    ...fileDocs.upload.doc,
    tags,
    auth: 'apiKeyOrSession',
    errors: [
      ...siteScoped,
      'INVALID_PATH',
      'INVALID_FILE_TYPE',
      'INVALID_CONTENT',
      'FILE_TOO_LARGE',
      'CONFLICT',
      'FILE_LIMIT',
      'STORAGE_LIMIT',
      'FOLDER_LIMIT',
      'RATE_LIMITED',
      'CAPACITY',
    ],
    // base64 of 10 MB plus JSON framing; the decoded size is checked exactly below.
    middleware: [admit.json, uploadJsonBody()],
    query: s.siteQuery,
    body: typed.uploadBody,
    responses: {
      200: { description: 'Stored', schema: s.uploadResponse, ...fileDocs.upload.ok },
    },
    handler: async ({ req, res, query, body }) => {
      const sitePath = normalizeSitePath(body.path);
      assertExtension(
        sitePath,
        uploadExtensions,
        'path',
        videoExtensions.has(extensionOf(sitePath)) ? ' Upload videos with POST /api/v1/videos/upload.' : '',
      );
      const bytes = uploadBytes(req, body.content, body.encoding);
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
    ...fileDocs.rename.doc,
    tags,
    auth: 'apiKeyOrSession',
    errors: [...siteScoped, 'INVALID_PATH', 'INVALID_FILE_TYPE', 'CONFLICT', 'FOLDER_LIMIT'],
    middleware: [smallJson],
    query: s.siteQuery,
    body: typed.renameFileBody,
    responses: {
      200: { description: 'Renamed', schema: s.renameResponse, ...fileDocs.rename.ok },
    },
    handler: async ({ req, res, query, body }) => {
      const oldPath = normalizeSitePath(body.old_path, 'old_path', 'existing');
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
    ...fileDocs.delete.doc,
    tags,
    auth: 'apiKeyOrSession',
    errors: [...siteScoped, 'INVALID_PATH', 'CONFLICT'],
    query: s.pathQuery,
    responses: {
      200: { description: 'Deleted', schema: s.pathMessageResponse, ...fileDocs.delete.ok },
    },
    handler: async ({ req, res, query }) => {
      const sitePath = normalizeSitePath(query.path, 'path', 'existing');
      const site = await siteForRequest(req, platform, query.site_id);
      await files.delete(site.id, sitePath);
      res.json({ success: true, message: `Deleted ${sitePath}`, path: sitePath });
    },
  });

  registry.add(router, {
    method: 'post',
    path: '/api/v1/files/create-folder',
    summary: 'Create a folder (parents as needed)',
    ...fileDocs.createFolder.doc,
    tags: ['Folders'],
    auth: 'apiKeyOrSession',
    errors: [...siteScoped, 'INVALID_PATH', 'CONFLICT', 'FOLDER_LIMIT'],
    middleware: [smallJson],
    query: s.siteQuery,
    body: s.folderBody,
    responses: {
      200: {
        description: 'Created, or already there',
        schema: s.pathMessageResponse,
        ...fileDocs.createFolder.ok,
      },
    },
    handler: async ({ req, res, query, body }) => {
      const folder = normalizeSitePath(body.path, 'path', 'folder');
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
    ...fileDocs.renameFolder.doc,
    tags: ['Folders'],
    auth: 'apiKeyOrSession',
    errors: [...siteScoped, 'INVALID_PATH', 'CONFLICT', 'FOLDER_LIMIT'],
    middleware: [smallJson],
    query: s.siteQuery,
    body: s.renameBody,
    responses: {
      200: { description: 'Moved', schema: s.renameFolderResponse, ...fileDocs.renameFolder.ok },
    },
    handler: async ({ req, res, query, body }) => {
      const oldPath = normalizeSitePath(body.old_path, 'old_path', 'existing');
      const newPath = normalizeSitePath(body.new_path, 'new_path', 'folder');
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
    ...fileDocs.deleteFolder.doc,
    tags: ['Folders'],
    auth: 'apiKeyOrSession',
    errors: [...siteScoped, 'INVALID_PATH', 'CONFLICT'],
    query: s.pathQuery,
    responses: {
      200: { description: 'Deleted', schema: s.deleteFolderResponse, ...fileDocs.deleteFolder.ok },
    },
    handler: async ({ req, res, query }) => {
      const folder = normalizeSitePath(query.path, 'path', 'existing');
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
    ...fileDocs.storageLimits.doc,
    tags: ['Storage'],
    auth: 'apiKeyOrSession',
    errors: siteScoped,
    query: s.siteQuery,
    responses: {
      200: { description: 'Usage and limits', schema: s.storageLimitsResponse, ...fileDocs.storageLimits.ok },
    },
    handler: async ({ req, res, query }) => {
      const site = await siteForRequest(req, platform, query.site_id);
      const usage = await platform.getUsage(site.id);
      if (!usage) throw new AppError('NOT_FOUND', { message: 'Site not found' });
      const rollback = await deploys.rollbackUsage(usage);
      res.json({ success: true, ...storageLimits(usage, rollback) });
    },
  });

  registry.add(router, {
    method: 'get',
    path: '/api/v1/hosting-info',
    summary: "The site's address and usage",
    ...fileDocs.hostingInfo.doc,
    tags: ['Storage'],
    auth: 'apiKeyOrSession',
    errors: siteScoped,
    query: s.siteQuery,
    responses: {
      200: { description: 'Hosting info', schema: s.hostingInfoResponse, ...fileDocs.hostingInfo.ok },
    },
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
    ...fileDocs.videoUpload.doc,
    tags: ['Videos'],
    auth: 'apiKeyOrSession',
    errors: [
      ...siteScoped,
      'INVALID_PATH',
      'INVALID_FILE_TYPE',
      'MISSING_PATH',
      'NO_FILE',
      'VIDEO_TOO_LARGE',
      'CONFLICT',
      'FILE_LIMIT',
      'STORAGE_LIMIT',
      'FOLDER_LIMIT',
      'UPLOAD_ABORTED',
      'UPLOAD_FAILED',
      'RATE_LIMITED',
      'CAPACITY',
    ],
    middleware: [admit.video],
    query: s.siteQuery,
    multipart: s.videoMultipart,
    responses: {
      200: { description: 'Stored', schema: s.uploadResponse, ...fileDocs.videoUpload.ok },
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
        // An unreachable database or blob store is a 503 with Retry-After, as on every route.
        throw outageError(err) ?? new AppError('UPLOAD_FAILED', {}, { cause: err });
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

  fileTypeRoutes({ registry, router, types: files.types });
  deployRoutes({ ...deps, router, admitBlob: admit.blob, admitBulk: admit.bulk });
  return router;
}
