import type { RouteLink } from '../http/index.js';

// The deploy routes' examples and links (checked against their schemas by the OpenAPI tests).

const ID = 'k7q2m4x9a3bc';
const HASH = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
const HASH2 = '2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824';
const deployExample = {
  id: ID,
  site_id: 1,
  state: 'published',
  draft: false,
  source: 'api',
  live: true,
  file_count: 2,
  bytes: 5,
  key_prefix: 'hp_live_3fA9',
  client: 'cli',
  created_at: '2026-01-05T10:00:00.000Z',
  finalized_at: '2026-01-05T10:00:02.000Z',
  published_at: '2026-01-05T10:00:02.000Z',
  message: 'Fix the header (#42)',
  changes: { added: 1, changed: 1, removed: 0 },
  preview_url: `https://${ID}--my-site.hostplane.example`,
};
const pagination = {
  current_page: 1,
  per_page: 100,
  total_items: 1,
  total_pages: 1,
  has_more: false,
  is_last_page: true,
};

const byId = (to: RouteLink['to'], description: string): RouteLink => ({
  to,
  description,
  parameters: { 'path.id': '$response.body#/id' },
});

export const deployDocs = {
  create: {
    requestExample: { query: {}, body: { files: { 'index.html': HASH2, 'css/site.css': HASH } } },
    ok: {
      example: {
        success: true,
        ...deployExample,
        state: 'uploading',
        live: false,
        bytes: 0,
        finalized_at: null,
        published_at: null,
        required: [HASH],
      },
      links: {
        UploadBlob: {
          to: { method: 'put', path: '/api/v1/deploys/:id/files/:sha256' },
          description: 'Upload each hash of `required`',
          parameters: { 'path.id': '$response.body#/id', 'path.sha256': '$response.body#/required/0' },
        },
        Finalize: byId(
          { method: 'post', path: '/api/v1/deploys/:id/finalize' },
          'Once every blob is uploaded',
        ),
        GetDeploy: byId({ method: 'get', path: '/api/v1/deploys/:id' }, 'The deploy and its manifest'),
        Publish: byId({ method: 'post', path: '/api/v1/deploys/:id/publish' }, 'A finalized draft'),
        Restore: byId({ method: 'post', path: '/api/v1/deploys/:id/restore' }, 'Back to it, later'),
      } satisfies Record<string, RouteLink>,
    },
  },
  upload: {
    requestExample: { params: { id: ID, sha256: HASH }, query: { site_id: '1' } },
    ok: { example: { success: true, hash: HASH, size: 0, state: 'ready', remaining: 0 } },
  },
  bulk: {
    requestExample: { params: { id: ID }, query: { site_id: '1' }, body: { [HASH]: '' } },
    ok: {
      example: {
        success: true,
        received: 1,
        already_present: 0,
        missing: [HASH2],
        state: 'uploading',
        remaining: 1,
      },
    },
  },
  switch: {
    requestExample: { params: { id: ID }, query: { site_id: '1' } },
    ok: { example: { success: true, ...deployExample } },
  },
  list: {
    requestExample: { query: { page: '1', per_page: '20' } },
    ok: {
      example: {
        success: true,
        live_deploy_id: ID,
        live_changed_since_deploy: false,
        pagination: { ...pagination, per_page: 20 },
        deploys: [deployExample],
      },
    },
  },
  get: {
    requestExample: { params: { id: ID }, query: { page: '1' } },
    ok: {
      example: {
        success: true,
        deploy: deployExample,
        pagination: { ...pagination, per_page: 1000, total_items: 2 },
        files: [
          { path: 'css/site.css', hash: HASH, size: 0, content_type: 'text/css; charset=utf-8' },
          { path: 'index.html', hash: HASH2, size: 5, content_type: 'text/html; charset=utf-8' },
        ],
      },
    },
  },
};
