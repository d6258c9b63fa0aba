import { afterAll, beforeAll, expect } from 'vitest';
import type { PlanType } from '../../src/platform/plans.js';
import {
  apiKeyHeader,
  rawRequest,
  startHostplane,
  type Backend,
  type TestHostplane,
  type TestSite,
} from './hostplane.js';

/** One entry of GET /api/v1/files/list (spec 2.1). */
export interface FileEntry {
  path: string;
  name: string;
  type: 'file' | 'folder';
  size: number;
  size_formatted: string;
  url: string | null;
  depth: number;
  parent: string | null;
}

export interface StorageLimits {
  success: boolean;
  plan: { name: string; type: string };
  usage: {
    files: { current: number; limit: number | null; available: number | null; percentage: number };
    storage: {
      current: number;
      limit: number | null;
      available: number | null;
      current_formatted: string;
      limit_formatted: string;
      available_formatted: string;
      percentage: number;
    };
  };
  warnings: { files_near_limit: boolean; storage_near_limit: boolean };
}

const q = (value: string) => encodeURIComponent(value);

/** The files, folders and video endpoints of one site, called with its API key. */
export function filesApi(hp: TestHostplane, site: TestSite) {
  const headers = apiKeyHeader(site);
  const post = (path: string, json: unknown) => hp.request(path, { method: 'POST', headers, json });
  return {
    site,
    /** `query` is appended as is, e.g. `?page=2&per_page=1`. */
    list: (query = '') => hp.request(`/api/v1/files/list${query}`, { headers }),
    get: (path: string) => hp.request(`/api/v1/files/get?path=${q(path)}`, { headers }),
    upload: (body: unknown) => post('/api/v1/files/upload', body),
    rename: (body: unknown) => post('/api/v1/files/rename', body),
    delete: (path: string) =>
      hp.request(`/api/v1/files/delete?path=${q(path)}`, { method: 'DELETE', headers }),
    createFolder: (body: unknown) => post('/api/v1/files/create-folder', body),
    renameFolder: (body: unknown) => post('/api/v1/files/rename-folder', body),
    deleteFolder: (path: string) =>
      hp.request(`/api/v1/files/delete-folder?path=${q(path)}`, { method: 'DELETE', headers }),
    storageLimits: () => hp.request('/api/v1/files/storage-limits', { headers }),
    hostingInfo: () => hp.request('/api/v1/hosting-info', { headers }),
    video: (form: FormData) => hp.request('/api/v1/videos/upload', { method: 'POST', headers, form }),
    /** Any request with this site's key: for raw bodies, odd methods and hand-written query strings. */
    raw: (path: string, init: { method?: string; body?: string | Buffer; contentType?: string } = {}) =>
      rawRequest(hp.port, path, {
        method: init.method ?? 'GET',
        headers: {
          host: 'localhost:8080',
          ...headers,
          ...(init.contentType ? { 'content-type': init.contentType } : {}),
        },
        ...(init.body !== undefined ? { body: init.body } : {}),
      }),
    /** GET on the site's own host, as a visitor; `urlPath` must already be percent-encoded. */
    serve: (urlPath: string, headersIn: Record<string, string> = {}) =>
      hp.request(urlPath, { host: `${site.slug}.localhost:8080`, headers: headersIn }),
  };
}

export type FilesApi = ReturnType<typeof filesApi>;

/** Uploads a text (or base64) file and fails the test unless it answers 200. */
export async function put(api: FilesApi, path: string, content: string, encoding?: 'base64'): Promise<void> {
  const res = await api.upload({ path, content, ...(encoding ? { encoding } : {}) });
  if (res.status !== 200) throw new Error(`upload ${path} → ${res.status} ${await res.text()}`);
}

/** Uploads `count` tiny files named `${prefix}-<n>.txt`, `concurrency` at a time. */
export async function fill(api: FilesApi, count: number, prefix = 'fill', concurrency = 25): Promise<void> {
  for (let start = 0; start < count; start += concurrency) {
    const batch = Array.from({ length: Math.min(concurrency, count - start) }, (_, i) => start + i);
    await Promise.all(batch.map((n) => put(api, `${prefix}-${String(n).padStart(4, '0')}.txt`, 'x')));
  }
}

export async function storageLimits(api: FilesApi): Promise<StorageLimits> {
  const res = await api.storageLimits();
  expect(res.status).toBe(200);
  return (await res.json()) as StorageLimits;
}

/** The paths of listed entries, in their order. */
export const paths = (entries: FileEntry[]) => entries.map((e) => e.path);

/** Every entry of the listing, all pages. */
export async function listAll(api: FilesApi): Promise<FileEntry[]> {
  const entries: FileEntry[] = [];
  for (let page = 1; ; page += 1) {
    const res = await api.list(`?page=${page}&per_page=100`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { files: FileEntry[]; pagination: { has_more: boolean } };
    entries.push(...body.files);
    if (!body.pagination.has_more) return entries;
  }
}

/** What a refused request must leave untouched: the whole listing and the usage counters. */
export async function snapshot(
  api: FilesApi,
): Promise<{ entries: FileEntry[]; files: number; bytes: number }> {
  const limits = await storageLimits(api);
  return {
    entries: await listAll(api),
    files: limits.usage.files.current,
    bytes: limits.usage.storage.current,
  };
}

/** Asserts an error answer: the status, a JSON `{error, message}` body, and `error` when given. */
export async function expectError(
  res: Response,
  status: number,
  error?: string,
): Promise<{ error: string; message: string; [extra: string]: unknown }> {
  const text = await res.text();
  expect(res.status, text).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  const body = JSON.parse(text) as { error: string; message: string };
  expect(typeof body.error).toBe('string');
  expect(typeof body.message).toBe('string');
  expect(body.message.length).toBeGreaterThan(0);
  if (error !== undefined) expect(body.error).toBe(error);
  return body;
}

/** The body a 200 answer carries, failing with the server's words otherwise. */
export async function okJson<T = Record<string, unknown>>(res: Response): Promise<T> {
  const text = await res.text();
  expect(res.status, text).toBe(200);
  return JSON.parse(text) as T;
}

/** The edge URL path of a site path: each segment percent-encoded. */
export const urlPathOf = (sitePath: string) => `/${sitePath.split('/').map(encodeURIComponent).join('/')}`;

/** The public URL the API reports for a site path (base URL port 8080, sites domain localhost). */
export const publicUrl = (site: TestSite, sitePath: string) =>
  `http://${site.slug}.localhost:8080${urlPathOf(sitePath)}`;

/**
 * Starts Hostplane on `backend` for the enclosing describe block (stopped after it). `freshSite()`
 * creates a new empty site each call, so tests do not see each other's files.
 */
export function hostplaneWithFreshSites(backend: Backend, slugPrefix: string) {
  let server: TestHostplane | undefined;
  let sites = 0;
  beforeAll(async () => {
    server = await startHostplane(backend);
  });
  afterAll(() => server?.stop());
  const fixture = {
    get hp(): TestHostplane {
      if (!server) throw new Error('Hostplane is not started (use inside the describe block)');
      return server;
    },
    freshSite: async (plan: PlanType = 'free'): Promise<FilesApi> =>
      filesApi(fixture.hp, await fixture.hp.createSite(`${slugPrefix}-${++sites}`, { plan })),
  };
  return fixture;
}
