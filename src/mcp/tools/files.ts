import { z } from 'zod';
import { ApiError } from '../api.js';
import { result } from '../results.js';
import { content, pageArgs, pagination, tool, withNextPage } from '../tool.js';

type Json = Record<string, unknown>;

/** The most characters of a file read_file answers (the rest: its URL, or a smaller max_chars). */
export const MAX_READ_CHARS = 200_000;

const path = (what: string) => z.string().min(1).max(1024).describe(what);

export const fileTools = [
  tool({
    name: 'list_files',
    feature: 'files',
    title: "The site's files and folders",
    description:
      "One page of the live files and folders (path, type, size, public URL), ordered by depth, folders first, then name; with the site's file count and storage used.",
    access: 'read',
    input: pageArgs(100, 100),
    output: {
      storage_folder: z.looseObject({ slug: z.string(), file_count: z.int(), storage_used: z.int() }),
      files: z.array(
        z.looseObject({ path: z.string(), type: z.string(), size: z.int(), url: z.string().nullable() }),
      ),
      pagination,
    },
    run: async ({ page, per_page }, api) => {
      const answer = await api.call<Json>('GET', '/api/v1/files/list', { query: { page, per_page } });
      const files = (answer.files as Json[]).map(({ path: p, type, size, url }) => ({
        path: p,
        type,
        size,
        url,
      }));
      return result("a page of the site's files and folders", {
        storage_folder: answer.storage_folder,
        files,
        pagination: withNextPage(answer.pagination as Json),
      });
    },
  }),
  tool({
    name: 'read_file',
    feature: 'files',
    title: 'Read one file of the site',
    description:
      `The file's content: text as UTF-8, other files as base64, at most max_chars characters (default and ceiling ${MAX_READ_CHARS}; ` +
      'truncated: true says there is more, fetch its url for the whole). The content is data written by the site, fenced as such.',
    access: 'read',
    input: {
      path: path('Path of the file, e.g. index.html'),
      max_chars: z.int().min(1).max(MAX_READ_CHARS).default(MAX_READ_CHARS),
    },
    output: {
      path: z.string(),
      encoding: z.string(),
      size: z.int(),
      url: z.string(),
      truncated: z.boolean(),
      content: z.string(),
    },
    run: async ({ path: filePath, max_chars }, api) => {
      const answer = await api.call<Json>('GET', '/api/v1/files/get', { query: { path: filePath } });
      const full = String(answer.content);
      const text = full.length > max_chars ? full.slice(0, max_chars) : full;
      const structured = {
        path: answer.path,
        encoding: answer.encoding ?? 'utf8',
        size: answer.size,
        url: answer.url,
        truncated: text.length < full.length,
        content: text,
      };
      return result('the file read: its path, encoding, size, address and content', structured);
    },
  }),
  tool({
    name: 'write_file',
    feature: 'files',
    title: 'Create or overwrite one file of the live site',
    description:
      "Writes one file at once on the live site (missing folders are created), within the plan's limits; at most 10 MB. " +
      'Allowed types: html, css, js, json, xml, txt, jpg, jpeg, png, gif, svg, webp, ico, pdf, woff, woff2, ttf, otf. ' +
      'To change many files together, use deploy_files (one atomic switch, with rollback).',
    access: 'write',
    idempotent: true,
    input: { path: path('Path with an allowed extension, e.g. about/index.html'), ...content },
    output: { path: z.string(), size: z.int(), url: z.string() },
    run: async ({ path: filePath, content: text, encoding }, api) => {
      const json =
        encoding === 'base64'
          ? { path: filePath, content: text, encoding }
          : { path: filePath, content: text };
      const answer = await api.call<Json>('POST', '/api/v1/files/upload', { json }).catch((err: unknown) => {
        // The API's size refusal names the limit, not the file (its body held one): name it.
        if (err instanceof ApiError && err.status === 400 && err.body.error === 'File too large')
          throw new ApiError(err.status, {
            ...err.body,
            path: filePath,
            message: `${filePath}: ${String(err.body.message)}`,
          });
        throw err;
      });
      return result('the file written', { path: answer.path, size: answer.size, url: answer.url });
    },
  }),
  tool({
    name: 'move_file',
    feature: 'files',
    title: 'Rename or move one file',
    description: 'Renames or moves a file (folders are created as needed); its public URL changes.',
    access: 'write',
    input: { from: path('The current path'), to: path('The new path') },
    output: { path: z.string(), message: z.string() },
    run: async ({ from, to }, api) => {
      const answer = await api.call<Json>('POST', '/api/v1/files/rename', {
        json: { old_path: from, new_path: to },
      });
      return result('the file moved', { path: to, message: String(answer.message ?? 'Moved') });
    },
  }),
  tool({
    name: 'delete_file',
    feature: 'files',
    title: 'Delete one file of the live site',
    description: 'Deletes a file at once (no trash; earlier deploys keep their copy).',
    access: 'destructive',
    idempotent: true,
    input: { path: path('Path of the file') },
    output: { path: z.string(), message: z.string() },
    run: async ({ path: filePath }, api) => {
      const answer = await api.call<Json>('DELETE', '/api/v1/files/delete', { query: { path: filePath } });
      return result('the file deleted', { path: filePath, message: String(answer.message ?? 'Deleted') });
    },
  }),
  tool({
    name: 'delete_folder',
    feature: 'files',
    title: 'Delete a folder and everything in it',
    description: 'Deletes a folder recursively, at once (no trash).',
    access: 'destructive',
    idempotent: true,
    input: { path: path('Path of the folder') },
    output: { path: z.string(), message: z.string() },
    run: async ({ path: folder }, api) => {
      const answer = await api.call<Json>('DELETE', '/api/v1/files/delete-folder', {
        query: { path: folder },
      });
      return result('the folder deleted', { path: folder, message: String(answer.message ?? 'Deleted') });
    },
  }),
];
