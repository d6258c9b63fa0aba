import type { Router } from 'express';
import { z } from 'zod';
import type { RouteRegistry } from '../http/index.js';
import { contentTypeFor, type FileTypes } from './file-types.js';
import { MAX_FILE_BYTES, MAX_VIDEO_BYTES } from './service.js';

const extensions = (what: string) => z.array(z.string()).describe(what);
export const fileTypesResponse = z.object({
  success: z.boolean(),
  file_extensions: extensions(
    'What POST /api/v1/files/upload, file renames and a deploy accept (at most 10 MB a file): the spec’s list and the operator’s additions',
  ),
  video_extensions: extensions(
    'What POST /api/v1/videos/upload and a deploy accept as videos (at most 50 MB)',
  ),
  extra_extensions: extensions(
    'The operator’s additions to the spec’s list (HOSTPLANE_EXTRA_FILE_TYPES), included in file_extensions',
  ),
  content_types: z
    .record(z.string(), z.string())
    .describe('The Content-Type a site serves each extension with, by extension'),
  max_file_bytes: z.number().int(),
  max_video_bytes: z.number().int(),
});

/** GET /api/v1/files/types: the server's effective file types, for clients that check before sending. */
export function fileTypeRoutes(deps: { registry: RouteRegistry; router: Router; types: FileTypes }): void {
  const { registry, router, types } = deps;
  const all = [...types.upload, ...types.video];
  const answer = {
    success: true,
    file_extensions: [...types.upload],
    video_extensions: [...types.video],
    extra_extensions: [...types.extra],
    content_types: Object.fromEntries(all.map((ext) => [ext, contentTypeFor(`f.${ext}`)])),
    max_file_bytes: MAX_FILE_BYTES,
    max_video_bytes: MAX_VIDEO_BYTES,
  };
  registry.add(router, {
    method: 'get',
    path: '/api/v1/files/types',
    summary: 'The file types this server accepts',
    description:
      'The extensions (lower case; matched in any letter case) that uploads, renames and deploys accept on this server: the spec’s list, and the types its operator added with HOSTPLANE_EXTRA_FILE_TYPES (such as map, mjs, webmanifest, wasm). The same for every site. `hostplane deploy` reads it to check a folder before sending anything.',
    tags: ['Files'],
    auth: 'apiKeyOrSession',
    responses: {
      200: {
        description: 'The effective lists',
        schema: fileTypesResponse,
        example: {
          ...answer,
          file_extensions: ['html', 'css', 'js', 'map'],
          video_extensions: ['mp4'],
          extra_extensions: ['map'],
          content_types: {
            html: 'text/html; charset=utf-8',
            css: 'text/css; charset=utf-8',
            js: 'text/javascript; charset=utf-8',
            map: 'application/json; charset=utf-8',
            mp4: 'video/mp4',
          },
        },
      },
    },
    handler: ({ res }) => {
      res.json(answer);
    },
  });
}
