import type { RouteDoc, RouteLink, RouteResponse } from '../http/index.js';

// The API reference's prose, examples and links for the files routes, kept beside routes.ts so
// the handlers stay readable. Examples are checked against the routes' zod schemas by
// test/unit/http/openapi-examples.test.ts; links are resolved (and refused when dangling) by openapi.ts.

type Doc = Pick<RouteDoc, 'description' | 'requestExample'>;
type Ok = Pick<RouteResponse, 'example' | 'links'>;

const site = 'http://demo.localhost:8080';
const route = (method: RouteLink['to']['method'], path: string) => ({ method, path });
const getFile = route('get', '/api/v1/files/get');
const renameFile = route('post', '/api/v1/files/rename');
const deleteFile = route('delete', '/api/v1/files/delete');
const renameFolder = route('post', '/api/v1/files/rename-folder');
const deleteFolder = route('delete', '/api/v1/files/delete-folder');

/** get → rename → delete of the file an answer names by `field` (`path`, `new_path`). */
const fileLinks = (field: string): Record<string, RouteLink> => ({
  GetFile: {
    to: getFile,
    description: 'Read the file back',
    parameters: { path: `$response.body#/${field}` },
  },
  RenameFile: {
    to: renameFile,
    description: 'Rename or move the file (new_path is yours to choose)',
    body: { old_path: `$response.body#/${field}` },
  },
  DeleteFile: {
    to: deleteFile,
    description: 'Delete the file',
    parameters: { path: `$response.body#/${field}` },
  },
});

/** rename → delete of the folder an answer names by `field`. */
const folderLinks = (field: string): Record<string, RouteLink> => ({
  RenameFolder: {
    to: renameFolder,
    description: 'Move the folder (new_path is yours to choose)',
    body: { old_path: `$response.body#/${field}` },
  },
  DeleteFolder: {
    to: deleteFolder,
    description: 'Delete the folder and everything in it',
    parameters: { path: `$response.body#/${field}` },
  },
});

const siteScope =
  'With an API key the site is the key’s own (a `site_id` of another site is a 403); with a session, ' +
  '`site_id` picks one of the account’s sites (another account’s is a 404).';

const paths =
  'Paths are relative to the site root and case-sensitive: no leading `/`, no empty, `.` or `..` ' +
  'segments, no control characters, Unicode line separators, invisible format characters or ' +
  'backslashes; at most 32 segments, 255 bytes a segment and 1024 bytes in all.';

export const fileDocs = {
  list: {
    doc: {
      description:
        'Lists the files and folders of the site, one page at a time (shallowest first, folders ' +
        'before files, then by name), with the ' +
        'site’s file count and storage use. Changes nothing.\n\n' +
        '`per_page` is 1 to 100 (default 100); a `page` past the last answers an empty `files` list. ' +
        `Folders have \`url: null\`. ${siteScope}`,
      requestExample: { query: { page: '1', per_page: '20' } },
    } satisfies Doc,
    ok: {
      example: {
        success: true,
        storage_folder: {
          slug: 'demo',
          name: 'demo',
          file_count: 2,
          storage_used: 2150,
          storage_used_formatted: '2.1 KB',
        },
        pagination: {
          current_page: 1,
          per_page: 20,
          total_items: 3,
          total_pages: 1,
          has_more: false,
          is_last_page: true,
        },
        files: [
          {
            path: 'assets',
            name: 'assets',
            type: 'folder',
            size: 0,
            size_formatted: '0 B',
            url: null,
            depth: 0,
            parent: null,
          },
          {
            path: 'index.html',
            name: 'index.html',
            type: 'file',
            size: 1024,
            size_formatted: '1 KB',
            url: `${site}/index.html`,
            depth: 0,
            parent: null,
          },
          {
            path: 'assets/style.css',
            name: 'style.css',
            type: 'file',
            size: 1126,
            size_formatted: '1.1 KB',
            url: `${site}/assets/style.css`,
            depth: 1,
            parent: 'assets',
          },
        ],
      },
    } satisfies Ok,
  },
  get: {
    doc: {
      description:
        'Reads one file. Text files (html, css, js, json, xml, txt, svg) that are valid UTF-8 come ' +
        'back as text (`encoding: "utf8"`), anything else as base64. Changes nothing.\n\n' +
        'Files over 10 MB are not returned inline (400): fetch them from their `url`. A folder or a ' +
        `missing path is a 404. ${siteScope}`,
      requestExample: { query: { path: 'index.html' } },
    } satisfies Doc,
    ok: {
      example: {
        success: true,
        path: 'index.html',
        content: '<!doctype html><title>Demo</title><h1>Hello</h1>',
        encoding: 'utf8',
        size: 49,
        url: `${site}/index.html`,
      },
      links: { RenameFile: fileLinks('path').RenameFile!, DeleteFile: fileLinks('path').DeleteFile! },
    } satisfies Ok,
  },
  upload: {
    doc: {
      description:
        'Creates a file, or overwrites the one at `path`; missing parent folders are created. The ' +
        'file is served at once at its `url` (caches of the site are dropped).\n\n' +
        'Send text as is, or binary content as base64 with `encoding: "base64"`. At most 10 MB ' +
        '(decoded); the extension must be one of `UploadExtension` (videos go to ' +
        '`POST /api/v1/videos/upload`). Uploading onto a folder is a 409. A new file counts against ' +
        'the plan’s file limit and its bytes against the storage limit (403 when over; see ' +
        `\`GET /api/v1/files/storage-limits\`). ${paths} ${siteScope}`,
      requestExample: {
        body: { path: 'index.html', content: '<!doctype html><title>Demo</title><h1>Hello</h1>' },
      },
    } satisfies Doc,
    ok: {
      example: {
        success: true,
        message: 'File uploaded successfully',
        path: 'index.html',
        size: 49,
        url: `${site}/index.html`,
      },
      links: fileLinks('path'),
    } satisfies Ok,
  },
  rename: {
    doc: {
      description:
        'Renames or moves one file; missing folders on the way to `new_path` are created. The file ' +
        'is served at its new `url` only: the old URL answers 404 from then on.\n\n' +
        'A page keeps a page extension and a video a video extension. Something already at ' +
        '`new_path` (or `new_path` equal to `old_path`) is a 409; a missing `old_path` is a 404. ' +
        `${paths} ${siteScope}`,
      requestExample: { body: { old_path: 'about.html', new_path: 'pages/about.html' } },
    } satisfies Doc,
    ok: {
      example: {
        success: true,
        message: 'Renamed about.html to pages/about.html',
        old_path: 'about.html',
        new_path: 'pages/about.html',
        url: `${site}/pages/about.html`,
      },
      links: fileLinks('new_path'),
    } satisfies Ok,
  },
  delete: {
    doc: {
      description:
        'Deletes one file at once; there is no trash. Its URL answers 404 from then on and its ' +
        'bytes stop counting against the plan. A folder or a missing path is a 404 (folders go ' +
        `with \`DELETE /api/v1/files/delete-folder\`). ${siteScope}`,
      requestExample: { query: { path: 'pages/about.html' } },
    } satisfies Doc,
    ok: {
      example: { success: true, message: 'Deleted pages/about.html', path: 'pages/about.html' },
      links: {
        GetDeletedFile: {
          to: getFile,
          description: 'The file is gone: reading it answers 404',
          parameters: { path: '$response.body#/path' },
        },
      },
    } satisfies Ok,
  },
  createFolder: {
    doc: {
      description:
        'Creates a folder and any missing parents; a folder that is already there is not an error ' +
        '(the message says so). A file at the path or on the way to it is a 409. Folders count ' +
        `against the plan’s file limit (403 when over). ${paths} ${siteScope}`,
      requestExample: { body: { path: 'assets/images' } },
    } satisfies Doc,
    ok: {
      example: { success: true, message: 'Folder assets/images created', path: 'assets/images' },
      links: folderLinks('path'),
    } satisfies Ok,
  },
  renameFolder: {
    doc: {
      description:
        'Moves a folder and everything in it to `new_path`; every file URL below it changes (the ' +
        'old ones answer 404). Missing parents of `new_path` are created.\n\n' +
        'Something already at `new_path`, a file on the way to it, `new_path` equal to `old_path` or ' +
        `inside it are 409s; a missing folder is a 404. ${paths} ${siteScope}`,
      requestExample: { body: { old_path: 'assets/images', new_path: 'assets/img' } },
    } satisfies Doc,
    ok: {
      example: {
        success: true,
        message: 'Moved folder assets/images to assets/img (12 files)',
        old_path: 'assets/images',
        new_path: 'assets/img',
        files_moved: 12,
      },
      links: folderLinks('new_path'),
    } satisfies Ok,
  },
  deleteFolder: {
    doc: {
      description:
        'Deletes a folder and everything in it, recursively and permanently (no trash). The files’ ' +
        `URLs answer 404 from then on. A file or a missing path is a 404. ${siteScope}`,
      requestExample: { query: { path: 'assets/img' } },
    } satisfies Doc,
    ok: {
      example: {
        success: true,
        message: 'Deleted folder assets/img (12 files)',
        path: 'assets/img',
        files_deleted: 12,
      },
    } satisfies Ok,
  },
  storageLimits: {
    doc: {
      description:
        'The site’s file count and storage against its plan’s limits (`null`: unlimited), with ' +
        'warnings from 80 % of a limit. `rollback` (beyond the spec) is what the deploys kept for ' +
        'rollback hold of their own (blobs outside the live deploy, each once), against its own bound; ' +
        `retention prunes the oldest beyond it. Changes nothing. ${siteScope}`,
      requestExample: { query: { site_id: '1' } },
    } satisfies Doc,
    ok: {
      example: {
        success: true,
        plan: { name: 'Free', type: 'free' },
        usage: {
          files: { current: 170, limit: 200, available: 30, percentage: 85 },
          storage: {
            current: 52428800,
            limit: 524288000,
            available: 471859200,
            current_formatted: '50 MB',
            limit_formatted: '500 MB',
            available_formatted: '450 MB',
            percentage: 10,
          },
        },
        rollback: {
          current: 20971520,
          limit: 524288000,
          current_formatted: '20 MB',
          limit_formatted: '500 MB',
          deploys: 3,
        },
        warnings: { files_near_limit: true, storage_near_limit: false },
      },
    } satisfies Ok,
  },
  hostingInfo: {
    doc: {
      description: `Where the site is served and how much it holds. Changes nothing. ${siteScope}`,
      requestExample: { query: { site_id: '1' } },
    } satisfies Doc,
    ok: {
      example: {
        success: true,
        subdomain: 'demo',
        base_url: site,
        storage_usage: { files_count: 2, storage_used: '2.1 KB' },
      },
    } satisfies Ok,
  },
  videoUpload: {
    doc: {
      description:
        'Uploads a video as `multipart/form-data` with a `path` field and a `file` part (send ' +
        '`path` first: the file is streamed to storage as it arrives). MP4, WebM, OGG or MOV (see ' +
        '`VideoExtension`), at most 50 MB (52428800 bytes). Creates or overwrites the file at ' +
        '`path`, like `POST /api/v1/files/upload`, and counts against the same plan limits. ' +
        `${paths} ${siteScope}`,
      requestExample: { body: { path: 'videos/intro.mp4', file: '(the MP4 bytes)' } },
    } satisfies Doc,
    ok: {
      example: {
        success: true,
        message: 'Video uploaded successfully',
        path: 'videos/intro.mp4',
        size: 7340032,
        url: `${site}/videos/intro.mp4`,
      },
      links: {
        RenameVideo: fileLinks('path').RenameFile!,
        DeleteVideo: fileLinks('path').DeleteFile!,
      },
    } satisfies Ok,
  },
};
