import client from 'prom-client';
import { registry } from '../observability/index.js';

// Labels are bounded: `tool` is one of the registered tool names (a call to any other name is
// refused by the SDK before it reaches a tool), `outcome` one of ok, client_error,
// unauthenticated, rate_limited, server_error, failed.
export const mcpToolCallsTotal = new client.Counter({
  name: 'hostplane_mcp_tool_calls_total',
  help: 'MCP tool calls, by tool and outcome.',
  labelNames: ['tool', 'outcome'] as const,
  registers: [registry],
});

export const mcpToolDuration = new client.Histogram({
  name: 'hostplane_mcp_tool_duration_seconds',
  help: 'Time an MCP tool call took, by tool (its API calls included).',
  labelNames: ['tool'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  registers: [registry],
});

export const mcpLargeBodiesInFlight = new client.Gauge({
  name: 'hostplane_mcp_large_bodies_in_flight',
  help: 'MCP requests with a large body (over 1 MiB, or of unknown length) being read or handled now.',
  registers: [registry],
});
