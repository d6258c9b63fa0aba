import { z } from 'zod';
import { queryId, queryInt } from '../http/index.js';
import { videoExtensions, type FileTypes } from './file-types.js';
import { FORBIDDEN_PATH_CHARS } from './paths.js';

// The path rules, written into the document so a generated client knows them. The server's
// own checks (paths.ts, the extension check) stay the ones that answer, with their own error
// texts ("Invalid path", "Invalid file type"); these patterns are documentation, a little
// narrower than what is accepted. A segment may start with "." (`.well-known`), not be "." or
// "..", and neither start nor end with whitespace (the server refuses that).
const F = FORBIDDEN_PATH_CHARS;
// At most 255 characters a segment (the server's rule is 255 bytes: exact for ASCII names): one
// that does not start with a dot, or a dot and then not a dot, or two dots and then more.
const SEGMENT =
  `(?:[^/\\s.${F}](?:[^/${F}]{0,253}[^/\\s${F}])?` +
  `|\\.[^/\\s.${F}](?:[^/${F}]{0,252}[^/\\s${F}])?` +
  `|\\.\\.(?:[^/${F}]{0,252}[^/\\s${F}]))`;
const anyCase = (ext: string) =>
  [...ext].map((c) => (/[a-z]/.test(c) ? `[${c}${c.toUpperCase()}]` : c)).join('');
// A new folder may not be named like an SQLite database file (paths.ts: the edge never serves one).
const NOT_DATABASE_NAME = `(?![^/]*\\.(?:${anyCase('sqlite')}3?|${anyCase('db')}3?)(?:-(?:${['wal', 'shm', 'journal'].map(anyCase).join('|')}))?\\.*(?:/|$))`;
const NEW_SEGMENT = `${NOT_DATABASE_NAME}${SEGMENT}`;
/** `existing`: a stored file's path, which may predate the database-name rule. */
const filePattern = (extensions: ReadonlySet<string>, existing = false) =>
  `^(?:${existing ? SEGMENT : NEW_SEGMENT}/){0,31}\\.?[^/\\s.${F}][^/${F}]{0,243}\\.(?:${[...extensions].map(anyCase).join('|')})$`;
const PATH_RULES =
  'Relative to the site root: no leading "/", no empty, "." or ".." segments, no control characters, ' +
  'line separators, invisible format characters or backslashes; at most 32 segments, 1024 bytes in all, 255 bytes a segment.';
const NEW_PATH_RULES =
  `${PATH_RULES} No folder on it may be named like an SQLite database file (ending .db, .db3, .sqlite, .sqlite3, ` +
  'or those with -wal, -shm, -journal, in any case): the site never serves such paths.';

/** A file or folder path (documented rules; checked by normalizeSitePath). */
export const sitePath = (description: string) =>
  z
    .string()
    .min(1)
    .meta({ pattern: `^${SEGMENT}(?:/${SEGMENT}){0,31}/?$`, maxLength: 1024 })
    .describe(`${description}. ${PATH_RULES}`);

/** A new folder's path: the path rules, and no segment named like an SQLite database file. */
const newFolderPath = (description: string) =>
  z
    .string()
    .min(1)
    .meta({ pattern: `^${NEW_SEGMENT}(?:/${NEW_SEGMENT}){0,31}/?$`, maxLength: 1024 })
    .describe(`${description}. ${NEW_PATH_RULES}`);

/** A path to upload to, ending in one of the allowed extensions. */
const filePath = (description: string, extensions: ReadonlySet<string>) =>
  z
    .string()
    .min(1)
    .meta({ pattern: filePattern(extensions), maxLength: 1024 })
    .describe(`${description}. Allowed extensions: ${[...extensions].join(', ')}. ${NEW_PATH_RULES}`);

/** A SQLite database path (the SQLite domain's install): the path rules, ending in .sqlite or .db. */
export const databasePath = (description: string) => filePath(description, new Set(['sqlite', 'db']));

export const videoExtension = z
  .enum([...videoExtensions] as [string, ...string[]])
  .describe('An extension POST /api/v1/videos/upload accepts (any letter case)');

export const siteIdQuery = queryId('Site (storage folder) id; only meaningful with session authentication');

// Query strings are closed: a parameter the route does not have (a typo such as `pth=`) is a 400,
// not silently ignored; the document says so (additionalProperties: false).
export const siteQuery = z.strictObject({ site_id: siteIdQuery });

export const listQuery = z.strictObject({
  page: queryInt({ min: 1, max: 999_999_999_999_999, default: 1 }),
  per_page: queryInt({ min: 1, max: 100, default: 100 }),
  site_id: siteIdQuery,
});

export const pathQuery = z.strictObject({ path: sitePath('The file or folder'), site_id: siteIdQuery });

// Documented only (the server answers a bad one with 400 "Invalid content"): what base64 is,
// exactly (whole groups of four, "=" padding), so that the document admits only what the server
// accepts. Known limit: V8's backtracking regex engine overflows its stack on this grouped pattern
// past about 6 MB, so a JavaScript client validating a large upload against the document must skip
// the pattern (a flat character class cannot count to four; the fuzzer found the gap it left).
const BASE64 = '^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$';
const base64Content = { pattern: BASE64, contentEncoding: 'base64' };

export const renameBody = z.object({
  old_path: sitePath('The current path'),
  new_path: newFolderPath('The new path: not old_path itself, nor inside it (409)'),
});
export const folderBody = z.object({ path: newFolderPath('The folder') });

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
export const pathMessageResponse = messageResponse.extend({
  path: z.string().describe('The canonical path'),
});
export const renameResponse = messageResponse.extend({
  old_path: z.string(),
  new_path: z.string(),
  url: z.url().describe('The public URL at the new path'),
});
export const deleteFolderResponse = pathMessageResponse.extend({
  files_deleted: z.int().describe('How many files went with the folder'),
});
export const renameFolderResponse = messageResponse.extend({
  old_path: z.string(),
  new_path: z.string(),
  files_moved: z.int().describe('How many files moved with the folder'),
});

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
  rollback: z
    .object({
      current: z.number().int().describe('Bytes only the deploys kept for rollback hold (each blob once)'),
      limit: nullableLimit.describe(
        'What they may hold (the plan’s storage limit); older deploys are pruned beyond it',
      ),
      current_formatted: z.string(),
      limit_formatted: z.string(),
      deploys: z.number().int().describe('Published deploys kept besides the live one'),
    })
    .describe('Beyond the spec: storage held for rollback, outside `usage.storage`'),
  warnings: z.object({ files_near_limit: z.boolean(), storage_near_limit: z.boolean() }),
});

export const hostingInfoResponse = z.object({
  success: z.boolean(),
  subdomain: z.string(),
  base_url: z.url(),
  storage_usage: z.object({ files_count: z.number().int(), storage_used: z.string() }),
});

export const videoMultipart = z.strictObject({
  file: z.string().meta({ format: 'binary' }).describe('MP4, WebM, OGG or MOV, at most 52428800 bytes'),
  path: filePath('Destination path, e.g. videos/intro.mp4', videoExtensions),
});

/**
 * The schemas whose paths name the server's file types (the spec's list and the operator's
 * HOSTPLANE_EXTRA_FILE_TYPES): built once per server, so its document says what it accepts.
 */
export function typedSchemas(types: FileTypes) {
  const { upload, video } = types;
  const any = new Set([...upload, ...video]);
  return {
    /** The extensions files/upload accepts, as an enum for generated clients. */
    uploadExtension: z
      .enum([...upload] as [string, ...string[]])
      .describe('An extension POST /api/v1/files/upload accepts (any letter case)'),
    uploadBody: z
      .object({
        path: filePath('Where to store the file', upload),
        content: z.string().describe('File content: text, or base64 when encoding is "base64"'),
        encoding: z.enum(['base64', 'utf8', 'utf-8', 'text']).optional(),
      })
      .meta({
        if: { properties: { encoding: { const: 'base64' } }, required: ['encoding'] },
        then: { properties: { content: base64Content } },
      }),
    renameFileBody: z
      .object({
        old_path: sitePath('The current path of the file'),
        new_path: filePath(
          'The new path; the same as old_path is a 409. A page keeps a page extension, a video a video extension',
          any,
        ),
      })
      .meta({
        // The kind of file is kept: written as a rule on the pair so generated clients know it.
        if: { properties: { old_path: { pattern: filePattern(video, true) } }, required: ['old_path'] },
        then: { properties: { new_path: { pattern: filePattern(video) } } },
        else: { properties: { new_path: { pattern: filePattern(upload) } } },
      }),
    /** A path in a deploy's manifest: any extension files/upload or videos/upload accepts. */
    manifestPath: filePath('A path of the site', any),
  };
}
