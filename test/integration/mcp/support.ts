import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

export type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- answers are checked field by field

/** The SDK's own client on `<url>/mcp?<query>`, with the key as a bearer (or X-API-Key). */
export async function connect(
  baseUrl: string,
  options: {
    key?: string;
    query?: string;
    header?: 'bearer' | 'x-api-key';
    headers?: Record<string, string>;
  } = {},
): Promise<Client> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key !== undefined) {
    if (options.header === 'x-api-key') headers['x-api-key'] = options.key;
    else headers.authorization = `Bearer ${options.key}`;
  }
  const url = new URL(`${baseUrl}/mcp${options.query ? `?${options.query}` : ''}`);
  const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers } });
  const client = new Client({ name: 'hostplane-test', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

/** Calls a tool and returns its result (successful or not). */
export async function call(client: Client, name: string, args: Json = {}): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult;
}

/** Calls a tool that must succeed: its structuredContent. */
export async function ok(client: Client, name: string, args: Json = {}): Promise<Json> {
  const result = await call(client, name, args);
  if (result.isError) throw new Error(`${name} failed: ${textOf(result)}`);
  return result.structuredContent as Json;
}

/**
 * Calls a tool that must fail: its error as one object, the first line's JSON (status, hint_for_ai,
 * retry_after_seconds) with the fenced JSON (the API's error, message…). A protocol error of the
 * SDK (an unknown tool, bad arguments) is plain text: `{text}`.
 */
export async function fails(client: Client, name: string, args: Json = {}): Promise<Json> {
  const result = await call(client, name, args);
  if (!result.isError) throw new Error(`${name} did not fail: ${textOf(result)}`);
  const text = textOf(result);
  if (!text.startsWith('{')) return { text };
  const { inside } = fenceOf(text);
  return { ...(JSON.parse(inside) as Json), ...(JSON.parse(text.slice(0, text.indexOf('\n'))) as Json) };
}

export function textOf(result: CallToolResult): string {
  return result.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');
}

/**
 * The one fence of a text: its random id, the JSON between its opening and closing lines, and the
 * text around it (the fence cut out).
 */
export function fenceOf(text: string): { id: string; inside: string; outside: string } {
  const open = /^<untrusted-data-([0-9a-f]{24})>$/m.exec(text);
  if (!open) throw new Error(`no untrusted-data fence in: ${text.slice(0, 300)}`);
  const id = open[1]!;
  const start = open.index + open[0].length + 1;
  const close = `\n</untrusted-data-${id}>`;
  const end = text.indexOf(close, start - 1);
  if (end < 0) throw new Error(`the fence is not closed in: ${text.slice(0, 300)}`);
  return {
    id,
    inside: text.slice(start, end),
    outside: text.slice(0, open.index) + text.slice(end + close.length),
  };
}
