import type { SqliteEngineErrorData } from './errors.js';
import type { NativeParts } from '../../config/index.js';
import type { EngineLimits, QueryJsonResult, VersionResult } from './types.js';

/** Messages between the pool (main thread) and its workers. */
export type Operation =
  | 'open'
  | 'query'
  | 'queryJson'
  | 'exec'
  | 'batch'
  | 'schema'
  | 'vacuum'
  | 'version'
  | 'setMaxBytes'
  | 'setVersion'
  | 'close';

export interface Request {
  id: number;
  op: Operation;
  dbId: number;
  args: unknown[];
  /** When the pool queued it (ms, performance.timeOrigin + performance.now(): comparable across threads). */
  sentAt: number;
}

/** How long a call waited for its worker, and how long it ran there. */
export interface Timing {
  queueMs: number;
  runMs: number;
  /** exec: how many calls shared its COMMIT (group commit; absent: 1). */
  group?: number;
}

/** Every answer carries the database's version and size, which the pool keeps in memory. */
export type Response =
  | { id: number; ok: true; value: unknown; state: VersionResult | undefined; timing: Timing }
  | { id: number; ok: false; error: SqliteEngineErrorData; state: VersionResult | undefined; timing: Timing };

export interface WorkerInit {
  limits: EngineLimits;
  native: NativeParts;
}

// On the wire, requests and answers are flat arrays, not objects: a structured clone writes an
// object's property names with every value, and the receiving thread looks each name up again and
// builds the object's shape property by property (with a reply per point read, the main thread
// spent ~6 % of its time deserializing answers, bench/sqlite). An array of plain values costs
// neither; each side rebuilds its objects as literals. The fields are in the order below.

/** Fields of one request on the wire: id, op, dbId, sentAt, args. */
const REQUEST_FIELDS = 5;

/** The calls of one message, flat (see above). */
export function encodeRequests(requests: readonly Request[]): unknown[] {
  const wire = new Array<unknown>(requests.length * REQUEST_FIELDS);
  let i = 0;
  for (const r of requests) {
    wire[i++] = r.id;
    wire[i++] = r.op;
    wire[i++] = r.dbId;
    wire[i++] = r.sentAt;
    wire[i++] = r.args;
  }
  return wire;
}

/** The calls of a message made by encodeRequests (anything else: none). */
export function decodeRequests(wire: unknown): Request[] {
  if (!Array.isArray(wire)) return [];
  const requests: Request[] = [];
  for (let i = 0; i + REQUEST_FIELDS <= wire.length; i += REQUEST_FIELDS)
    requests.push({
      id: wire[i] as number,
      op: wire[i + 1] as Operation,
      dbId: wire[i + 2] as number,
      sentAt: wire[i + 3] as number,
      args: wire[i + 4] as unknown[],
    });
  return requests;
}

/**
 * One answer on the wire: id, ok (1 or 0), value or error, the state's version and size (-1
 * without a state), queueMs, runMs, group (0: ran alone). A queryJson value goes as
 * [rowsJson, rowCount, truncated, version] (see encodeValue).
 */
export function encodeResponse(r: Response, op: Operation): unknown[] {
  return [
    r.id,
    r.ok ? 1 : 0,
    r.ok ? encodeValue(op, r.value) : r.error,
    r.state ? r.state.version : -1,
    r.state ? r.state.sizeBytes : -1,
    r.timing.queueMs,
    r.timing.runMs,
    r.timing.group ?? 0,
  ];
}

/** The answers of a message made by encodeResponse (`opOf`: the op of a pending call, to decode its value). */
export function decodeResponse(
  wire: unknown,
  opOf: (id: number) => Operation | undefined,
): Response | undefined {
  if (!Array.isArray(wire) || wire.length !== 8) return undefined;
  const id = wire[0] as number;
  const version = wire[3] as number;
  const state = version < 0 ? undefined : { version, sizeBytes: wire[4] as number };
  const timing: Timing = { queueMs: wire[5] as number, runMs: wire[6] as number };
  if (wire[7] !== 0) timing.group = wire[7] as number;
  if (wire[1] !== 1) return { id, ok: false, error: wire[2] as SqliteEngineErrorData, state, timing };
  return { id, ok: true, value: decodeValue(opOf(id), wire[2]), state, timing };
}

function encodeValue(op: Operation, value: unknown): unknown {
  if (op !== 'queryJson') return value;
  const v = value as QueryJsonResult;
  return [v.rowsJson, v.rowCount, v.truncated, v.version];
}

function decodeValue(op: Operation | undefined, value: unknown): unknown {
  if (op !== 'queryJson' || !Array.isArray(value)) return value;
  return { rowsJson: value[0], rowCount: value[1], truncated: value[2], version: value[3] };
}
