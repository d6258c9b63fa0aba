import { z } from 'zod';
import { queryId, queryInt } from '../http/route.js';

const siteIdQuery = queryId('Site (storage folder) id; only meaningful with session authentication');

export const siteQuery = z.object({ site_id: siteIdQuery });

export const listQuery = z.object({
  page: queryInt({ min: 1, default: 1 }),
  per_page: queryInt({ min: 1, max: 100, default: 100 }),
  site_id: siteIdQuery,
});

export const pathQuery = z.object({ path: z.string().min(1), site_id: siteIdQuery });

export const uploadBody = z.object({
  path: z.string().min(1).describe('Path relative to the site root, with an allowed extension'),
  content: z.string().describe('File content: text, or base64 when encoding is "base64"'),
  encoding: z.enum(['base64', 'utf8', 'utf-8', 'text']).optional(),
});

export const renameBody = z.object({ old_path: z.string().min(1), new_path: z.string().min(1) });
export const folderBody = z.object({ path: z.string().min(1) });

export const fileEntry = z.object({
  path: z.string(),
  name: z.string(),
  type: z.enum(['file', 'folder']),
  size: z.number().int(),
  size_formatted: z.string(),
  url: z.url().nullable(),
  depth: z.number().int(),
  parent: z.string().nullable(),
});

export const listResponse = z.object({
  success: z.boolean(),
  storage_folder: z.object({
    slug: z.string(),
    name: z.string(),
    file_count: z.number().int(),
    storage_used: z.number().int(),
    storage_used_formatted: z.string(),
  }),
  pagination: z.object({
    current_page: z.number().int(),
    per_page: z.number().int(),
    total_items: z.number().int(),
    total_pages: z.number().int(),
    has_more: z.boolean(),
    is_last_page: z.boolean(),
  }),
  files: z.array(fileEntry),
});

export const getResponse = z.object({
  success: z.boolean(),
  path: z.string(),
  content: z.string(),
  encoding: z.enum(['utf8', 'base64']),
  size: z.number().int(),
  url: z.url(),
});

export const uploadResponse = z.object({
  success: z.boolean(),
  message: z.string(),
  path: z.string(),
  size: z.number().int(),
  url: z.url(),
});

export const messageResponse = z.object({ success: z.boolean(), message: z.string() });

const nullableLimit = z.number().int().nullable().describe('null when the plan is unlimited');

export const storageLimitsResponse = z.object({
  success: z.boolean(),
  plan: z.object({ name: z.string(), type: z.string() }),
  usage: z.object({
    files: z.object({
      current: z.number().int(),
      limit: nullableLimit,
      available: nullableLimit,
      percentage: z.number(),
    }),
    storage: z.object({
      current: z.number().int(),
      limit: nullableLimit,
      available: nullableLimit,
      current_formatted: z.string(),
      limit_formatted: z.string(),
      available_formatted: z.string(),
      percentage: z.number(),
    }),
  }),
  warnings: z.object({ files_near_limit: z.boolean(), storage_near_limit: z.boolean() }),
});

export const hostingInfoResponse = z.object({
  success: z.boolean(),
  subdomain: z.string(),
  base_url: z.url(),
  storage_usage: z.object({ files_count: z.number().int(), storage_used: z.string() }),
});

export const videoMultipart = z.object({
  file: z.string().meta({ format: 'binary' }).describe('MP4, WebM, OGG or MOV, at most 52428800 bytes'),
  path: z.string().describe('Destination path, e.g. videos/intro.mp4'),
});

export const errorBody = z
  .object({ error: z.string(), message: z.string() })
  .catchall(z.unknown())
  .meta({ id: 'Error' });
