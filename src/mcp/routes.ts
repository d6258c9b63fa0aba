import type { RequestListener } from 'node:http';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { Router, type Request, type RequestHandler } from 'express';
import { z } from 'zod';
import { siteUrl, type Config } from '../config/index.js';
import { AppError } from '../errors/index.js';
import { jsonBody, noStore, type RouteRegistry, type UploadAdmission } from '../http/index.js';
import type { Logger } from '../observability/index.js';
import { PublicApi } from './api.js';
import { llmsTxt } from './llms.js';
import { mcpLargeBodiesInFlight } from './metrics.js';
import { createMcpServer, parseOptions } from './server.js';

/**
 * The largest /mcp body: deploy_files carries a site inline (base64 grows bytes by a third), so
 * this is well above the API's 10 MB per file; bigger sites go through deploy_manifest + upload_blob.
 */
export const MAX_MCP_BODY_BYTES = 20 * 1024 * 1024;

/**
 * The largest /mcp body without a key: such a caller can only list tools and call publish_page,
 * whose page is bounded by /ai/publish's own 4 MB body; anyone may call, so no 20 MB parse for them.
 */
export const MAX_KEYLESS_MCP_BODY_BYTES = 5 * 1024 * 1024;

/**
 * The most messages in one JSON-RPC batch (only protocol 2025-03-26 has batches; the SDK allows
 * 100). Each is handled at once, so 100 read_file calls of 10 MB files would hold gigabytes.
 */
export const MAX_MCP_BATCH = 10;

/** A body over this (or of unknown length) takes its share of the process's upload byte budget. */
const LARGE_BODY_BYTES = 1024 * 1024;

export interface McpDeps {
  config: Config;
  logger: Logger;
  /** Whether an API key (permanent or temporary) is valid: the X-API-Key check. */
  authenticateKey(key: string): Promise<boolean>;
  /** The app's own listener, which the tools call in-process (bound once the app is built). */
  listener(): RequestListener;
  /** The process's upload budget: large bodies are admitted by it, as uploads are. */
  uploads: UploadAdmission;
}

const keyHint =
  'The API key this MCP server is configured with is not valid (unknown, expired or revoked). Ask the user for a ' +
  'current Hostplane API key of the site and put it in the MCP client configuration as "Authorization: Bearer <key>".';

/**
 * The credential of an MCP request: X-API-Key, else a Bearer token; undefined without either. A
 * header that is present but empty is '' (refused like a wrong key, never ignored).
 */
function keyOf(req: Request): string | undefined {
  const key = req.get('x-api-key');
  if (key !== undefined) return key.trim();
  const header = req.get('authorization');
  if (header === undefined || !/^Bearer\b/i.test(header)) return undefined;
  return header.match(/^Bearer\s+(\S+)\s*$/i)?.[1] ?? '';
}

export function mcpRoutes(deps: McpDeps & { registry: RouteRegistry }): Router {
  const { config, logger, registry } = deps;
  const router = Router();

  // Credentials (and the URL's options) before the body is read: a bad key costs no upload.
  const admit: RequestHandler = (req, res, next) => {
    try {
      parseOptions(req.query);
    } catch (err) {
      return next(err);
    }
    const key = keyOf(req);
    if (key === undefined) return next();
    (key === '' ? Promise.resolve(false) : deps.authenticateKey(key)).then((valid) => {
      if (valid) return next();
      res.set('WWW-Authenticate', 'Bearer realm="hostplane"');
      next(new AppError('UNAUTHORIZED', { message: 'Invalid or expired API key.', hint: keyHint }));
    }, next);
  };

  // Stateless Streamable HTTP (the SDK's documented stateless mode): a fresh server and transport
  // per request, no session id, JSON answers. Any replica serves any request.
  const apiHost = new URL(config.baseUrl).host;
  const keyedBody = jsonBody(
    `${MAX_MCP_BODY_BYTES}b`,
    () =>
      new AppError('PAYLOAD_TOO_LARGE', {
        message: `An /mcp request body is at most ${MAX_MCP_BODY_BYTES / 1024 / 1024} MB. Send a site that big with deploy_manifest (hashes only), then upload_blob for each content it asks for (one file a call, up to 10 MB; 50 MB for a video), then finalize_deploy.`,
      }),
  );
  const keylessBody = jsonBody(
    `${MAX_KEYLESS_MCP_BODY_BYTES}b`,
    () =>
      new AppError('PAYLOAD_TOO_LARGE', {
        message: `Without an API key an /mcp request body is at most ${MAX_KEYLESS_MCP_BODY_BYTES / 1024 / 1024} MB (publish_page takes a page of up to 4 MB).`,
      }),
  );
  // Bad JSON is the protocol's own error (JSON-RPC -32700 Parse error), with HTTP 400 as the
  // Streamable HTTP transport answers it; the other refusals of the body keep the API's shape.
  const body: RequestHandler = (req, res, next) =>
    (keyOf(req) === undefined ? keylessBody : keyedBody)(req, res, (err?: unknown) => {
      if ((err as { type?: string } | undefined)?.type !== 'entity.parse.failed') return next(err);
      res.status(400).json({
        jsonrpc: '2.0',
        id: null,
        error: { code: -32700, message: 'Parse error: the request body is not valid JSON.' },
      });
    });

  // A 20 MB JSON body costs several times that once parsed (the string, the tree, the base64
  // strings, the decoded bytes): large bodies take their share of the process's upload byte budget
  // (three times their length; chunked: the largest body), refused with 503 / 429 + Retry-After
  // before they are read, as uploads are. Small ones (every call but inline deploys and big writes) pass.
  const admitLarge = deps.uploads.admit(
    (req) => `mcp:${keyOf(req) ?? ''}`,
    (declared) => 3 * (declared ?? MAX_MCP_BODY_BYTES),
  );
  const largeBodySlot: RequestHandler = (req, res, next) => {
    const length = Number(req.get('content-length') ?? NaN);
    if (Number.isFinite(length) && length <= LARGE_BODY_BYTES) return next();
    admitLarge(req, res, (err?: unknown) => {
      if (err === undefined) {
        mcpLargeBodiesInFlight.inc();
        res.once('close', () => mcpLargeBodiesInFlight.dec());
      }
      next(err);
    });
  };

  // A tool's result may carry a secret (sqlite_install's token): no answer of /mcp is stored.
  router.post('/mcp', noStore, admit, largeBodySlot, body, (req, res, next) => {
    if (Array.isArray(req.body) && req.body.length > MAX_MCP_BATCH)
      return next(
        new AppError('INVALID_REQUEST', {
          message: `A JSON-RPC batch holds at most ${MAX_MCP_BATCH} messages.`,
        }),
      );
    const options = parseOptions(req.query);
    const api = new PublicApi(deps.listener, {
      key: keyOf(req),
      remoteAddress: req.ip ?? req.socket.remoteAddress ?? '127.0.0.1',
      host: apiHost,
      requestId: req.id,
    });
    const server = createMcpServer(api, options, logger, req.id);
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    server
      .connect(transport)
      .then(() => transport.handleRequest(req, res, req.body))
      .catch(next);
  });
  // No sessions, so nothing to stream back (GET) or end (DELETE): 405, as the SDK's stateless examples.
  router.all('/mcp', (req, _res, next) =>
    next(new AppError('METHOD_NOT_ALLOWED', { method: req.method, allow: ['POST'] })),
  );

  const text = llmsTxt(config.baseUrl, siteUrl(config, '<slug>'));
  registry.add(router, {
    method: 'get',
    path: '/llms.txt',
    summary: 'What the service is and how an agent uses it (llmstxt.org)',
    description:
      'Markdown for language models: the service, where the OpenAPI document and the MCP endpoint (`/mcp`, with its URL options) are, how to authenticate, and the deploy flow.',
    tags: ['Agents'],
    auth: 'none',
    responses: {
      200: { description: 'The llms.txt document', contentType: 'text/plain', schema: z.string() },
    },
    handler: ({ res }) => void res.type('text/plain; charset=utf-8').send(text),
  });
  return router;
}
