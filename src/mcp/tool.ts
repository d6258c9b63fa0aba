import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { AppError } from '../errors/index.js';
import type { PublicApi } from './api.js';
import type { ToolResult } from './results.js';

/** The tool groups a client may ask for in the URL (`?features=files,deploys`). */
export const FEATURES = ['publish', 'deploys', 'files', 'forms', 'sqlite', 'usage'] as const;
export type Feature = (typeof FEATURES)[number];

/**
 * read: lists or reads, listed in read-only mode; write: creates or changes; destructive: deletes
 * or replaces what is there (the site's live files, a form and its submissions).
 */
export type Access = 'read' | 'write' | 'destructive';

export interface ToolDefinition<S extends z.ZodRawShape> {
  name: string;
  feature: Feature;
  title: string;
  description: string;
  access: Access;
  /** Calling it again with the same arguments changes nothing more. */
  idempotent?: boolean;
  /** Usable without an API key (publish_page: the /ai/publish rules). */
  anonymous?: boolean;
  input: S;
  output: z.ZodRawShape;
  /** Its answer is built by `result` (a trusted sentence, the data fenced): never by hand. */
  run(args: z.infer<z.ZodObject<S>>, api: PublicApi): Promise<ToolResult>;
}

/** A tool, its generic input type erased: what the server lists and instruments. */
export interface Tool {
  name: string;
  feature: Feature;
  access: Access;
  anonymous: boolean;
  register(server: McpServer, api: PublicApi, around: Around): void;
}

/** Runs a call with its instrumentation (span, metric, log) and error mapping: see server.ts. */
export type Around = (tool: Tool, call: () => Promise<CallToolResult>) => Promise<CallToolResult>;

const keyHint =
  'Ask the user for a Hostplane API key of the site (the account owner creates one per site; temporary keys come from ' +
  'POST /api/keys/generate-temp) and add it to this MCP server\'s configuration as the header "Authorization: Bearer <key>".';

/** The registry's 401 for a keyed tool called without a key. */
export const missingKey = () =>
  new AppError('UNAUTHORIZED', {
    message:
      'This tool needs the site\'s API key: send "Authorization: Bearer <key>" (or X-API-Key) to /mcp.',
    hint: keyHint,
  });

export function tool<S extends z.ZodRawShape>(definition: ToolDefinition<S>): Tool {
  const { name, feature, access, anonymous = false } = definition;
  const self: Tool = {
    name,
    feature,
    access,
    anonymous,
    register(server, api, around) {
      // Strict: an argument the tool does not take (a misspelt or outdated name, e.g. a field of
      // the HTTP API under another spelling) is refused, never dropped so that a default applies.
      const input = z.strictObject(definition.input);
      server.registerTool(
        name,
        {
          title: definition.title,
          description: definition.description,
          inputSchema: input,
          outputSchema: definition.output,
          annotations: {
            title: definition.title,
            readOnlyHint: access === 'read',
            destructiveHint: access === 'destructive',
            idempotentHint: access === 'read' || definition.idempotent === true,
            openWorldHint: false,
          },
        },
        // The SDK has validated the arguments against `input` already; parsing again gives them
        // their type here (the SDK's inference does not reach through the generic).
        (async (args: unknown) =>
          around(self, async () => {
            if (!anonymous && !api.hasKey) throw missingKey();
            return definition.run(input.parse(args) as z.infer<z.ZodObject<S>>, api);
          })) as never,
      );
    },
  };
  return self;
}

/** Shared input pieces. */
export const pageArgs = (maxPerPage: number, defaultPerPage: number) => ({
  page: z.int().min(1).max(1_000_000).default(1).describe('Page number, from 1'),
  per_page: z
    .int()
    .min(1)
    .max(maxPerPage)
    .default(defaultPerPage)
    .describe(`Items per page (≤ ${maxPerPage})`),
});

export const content = {
  content: z
    .string()
    .max(16 * 1024 * 1024)
    .describe('The file content: text, or base64 with encoding "base64"'),
  encoding: z
    .enum(['utf8', 'base64'])
    .default('utf8')
    .describe('utf8 (default) for text, base64 for binary files (images, fonts, PDF)'),
};

/** The bytes of a `content` + `encoding` pair. */
export function bytesOf(value: string, encoding: 'utf8' | 'base64'): Buffer {
  if (encoding === 'utf8') return Buffer.from(value, 'utf8');
  // Whitespace first, then a check whose classes do not overlap: one pass each. (Whitespace in
  // the same class as the padding's trailing space backtracked quadratically: 2 MB took hours.)
  const compact = value.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(compact) || compact.length % 4 === 1)
    throw new AppError('INVALID_REQUEST', { message: 'content is not valid base64' });
  return Buffer.from(compact, 'base64');
}

/** The pagination every paged answer carries (the API's own, with a next_page marker). */
export const pagination = z.looseObject({
  current_page: z.int(),
  per_page: z.int(),
  total_items: z.int(),
  has_more: z.boolean(),
  next_page: z.int().nullable().describe('The page to ask for next, null on the last page'),
});

export function withNextPage(p: Record<string, unknown>): Record<string, unknown> {
  const current = Number(p.current_page);
  return { ...p, next_page: p.has_more === true ? current + 1 : null };
}
