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

/** Calls a tool that must fail: the error JSON of its text block. */
export async function fails(client: Client, name: string, args: Json = {}): Promise<Json> {
  const result = await call(client, name, args);
  if (!result.isError) throw new Error(`${name} did not fail: ${textOf(result)}`);
  return JSON.parse(textOf(result)) as Json;
}

export function textOf(result: CallToolResult): string {
  return result.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');
}
