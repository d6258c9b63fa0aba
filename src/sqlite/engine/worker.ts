import { parentPort, receiveMessageOnPort, workerData, type MessagePort } from 'node:worker_threads';
import { GroupCommitDatabase } from './group-commit.js';
import { SqliteEngineError } from './errors.js';
import {
  decodeRequests,
  encodeResponse,
  type Operation,
  type Request,
  type Response,
  type WorkerInit,
} from './protocol.js';
import type { GroupOutcome } from './types.js';

/**
 * A worker of the pool: owns the connections of the databases pinned to it and runs their SQL one
 * call at a time, so a database's writes are serialized and the main event loop runs none of it.
 * Requests arrive in batches (one message per turn of the main thread's event loop); answers go
 * back one by one. Each database has its own queue and the worker serves them in turn, one call
 * each, so one database's long queue delays another's call by about one statement, not by all of
 * its queue. A long batch lets the others have their turn between its statements (its hook).
 */
const init = workerData as WorkerInit;
const port = parentPort;
const databases = new Map<number, GroupCommitDatabase>();

function handle(request: Request): unknown {
  if (request.op === 'open') {
    const [filePath, options] = request.args as ConstructorParameters<typeof GroupCommitDatabase>;
    databases.set(request.dbId, new GroupCommitDatabase(filePath, options, init.limits, init.native));
    return null;
  }
  const db = databases.get(request.dbId);
  if (!db) throw new SqliteEngineError({ kind: 'closed', message: 'The database is not open' });
  const [a, b] = request.args;
  switch (request.op) {
    case 'query':
      return db.query(a as string, b);
    case 'queryJson': {
      const { rows, rowCount, truncated, version } = db.query(a as string, b);
      return { rowsJson: JSON.stringify(rows), rowCount, truncated, version };
    }
    case 'exec':
      return db.exec(a as string, b);
    case 'batch':
      // A batch served inside another batch's hook just runs: the hooks do not nest.
      return db.batch(
        a as Parameters<GroupCommitDatabase['batch']>[0],
        yielding || !port ? undefined : () => othersTurn(port, request.dbId),
      );
    case 'schema':
      return db.schema();
    case 'vacuum':
      return db.vacuum();
    case 'version':
      return db.state;
    case 'setMaxBytes':
      db.setMaxBytes(a as number | null);
      return null;
    case 'setVersion':
      db.setVersion(a as number);
      return null;
    case 'close':
      databases.delete(request.dbId);
      db.close();
      return null;
  }
}

const now = () => performance.timeOrigin + performance.now();

function answer(request: Request): Response {
  const started = now();
  try {
    return respond(request, started, { ok: true, value: handle(request) });
  } catch (error) {
    return respond(request, started, { ok: false, error });
  }
}

/** A call's answer: its value, or its failure as the engine's typed error. */
function respond(
  request: Request,
  started: number,
  outcome: { ok: true; value: unknown } | GroupOutcome,
  group?: number,
): Response {
  const timing: Response['timing'] = {
    queueMs: Math.max(0, started - request.sentAt),
    runMs: now() - started,
  };
  if (group !== undefined) timing.group = group; // no field to clone on a call that ran alone
  const state = databases.get(request.dbId)?.state;
  if (outcome.ok) return { id: request.id, ok: true, value: outcome.value, state, timing };
  const err = outcome.error;
  const code = (err as { code?: unknown } | null)?.code;
  const error =
    err instanceof SqliteEngineError
      ? err
      : new SqliteEngineError({
          // e.g. opening a file that is not a database: SQLite's error; anything else is ours.
          kind: typeof code === 'string' && code.startsWith('SQLITE_') ? 'sql' : 'internal',
          message: err instanceof Error ? err.message : String(err),
          sqliteCode: typeof code === 'string' ? code : undefined,
        });
  return { id: request.id, ok: false, error: error.toData(), state, timing };
}

/** Exec calls committed together at most (group commit), and how long a group keeps taking calls. */
const GROUP_MAX_CALLS = 64;
const GROUP_MAX_MS = 5;

/**
 * Serves the call at the head of a database's queue. When it is an exec and more execs of that
 * database follow it, they run as one group commit (GroupCommitDatabase.execGroup): one transaction,
 * one COMMIT, each call answered after it; the calls the group's time did not reach go back to
 * the head of the queue. Only a run of execs: a query or a batch between them keeps its place.
 */
function serveHead(port: MessagePort, queue: Request[]): void {
  const head = queue[0] as Request;
  let count = 1;
  if (head.op === 'exec')
    while (count < queue.length && count < GROUP_MAX_CALLS && queue[count]?.op === 'exec') count++;
  const db = count > 1 ? databases.get(head.dbId) : undefined;
  if (!db) {
    const request = queue.shift() as Request;
    reply(port, answer(request), request.op);
    return;
  }
  const group = queue.splice(0, count);
  const started = now();
  let outcomes: GroupOutcome[];
  try {
    outcomes = db.execGroup(
      group.map((r) => ({ sql: r.args[0], params: r.args[1] })),
      GROUP_MAX_MS,
    );
  } catch (error) {
    outcomes = group.map(() => ({ ok: false, error }));
  }
  queue.unshift(...group.slice(outcomes.length));
  outcomes.forEach((outcome, i) =>
    reply(port, respond(group[i] as Request, started, outcome, outcomes.length), 'exec'),
  );
}

/** Calls waiting, per database in arrival order; `turns` holds the databases with some, in turn order. */
const queues = new Map<number, Request[]>();
const turns: number[] = [];
let running = false;
/** Inside a batch's hook, serving the other databases. */
let yielding = false;
/** Calls that came in while one ran are read between calls at most this often (ms). */
const DRAIN_EVERY_MS = 1;

function enqueue(message: unknown): void {
  for (const request of decodeRequests(message)) {
    const queue = queues.get(request.dbId);
    if (queue) queue.push(request);
    else {
      queues.set(request.dbId, [request]);
      turns.push(request.dbId);
    }
  }
}

/** Messages the main thread sent meanwhile, read now rather than when the worker is idle. */
function drain(port: MessagePort): void {
  for (let m = receiveMessageOnPort(port); m; m = receiveMessageOnPort(port)) enqueue(m.message);
}

// Each answer goes back as soon as it is ready, not with its batch: the main thread writes the
// first responses while this thread runs the rest (answering a batch at once left each thread
// idle while the other worked; point reads +20-45 % in bench/sqlite).
function reply(port: MessagePort, response: Response, op: Operation): void {
  try {
    port.postMessage(encodeResponse(response, op));
  } catch (err) {
    // A value that cannot be cloned: the call still gets its answer, as a failure.
    const error = new SqliteEngineError({
      kind: 'internal',
      message: `The answer could not be sent: ${err instanceof Error ? err.message : String(err)}`,
    });
    port.postMessage(
      encodeResponse(
        { id: response.id, ok: false, error: error.toData(), state: response.state, timing: response.timing },
        op,
      ),
    );
  }
}

/** Serves the queues round-robin, one call per database per turn, until all are empty. */
function serve(port: MessagePort): void {
  if (running) return;
  running = true;
  try {
    let drained = performance.now();
    while (turns.length > 0) {
      const dbId = turns.shift() as number;
      const queue = queues.get(dbId) as Request[];
      serveHead(port, queue);
      const at = performance.now();
      if (at - drained >= DRAIN_EVERY_MS) {
        drain(port);
        drained = at;
      }
      // After the drain: a database that waited during this call goes before this one's next.
      if (queue.length > 0) turns.push(dbId);
      else queues.delete(dbId);
    }
  } finally {
    running = false;
  }
}

/**
 * Between two statements of a long batch of `batchDbId` (its transaction open on its own
 * connection): one round of the other databases' queues, one call each, so a batch of 10 s holds
 * another database's call for about one statement, not the whole batch. Never the batch's own
 * database: its calls wait for the batch, in order.
 */
function othersTurn(port: MessagePort, batchDbId: number): void {
  yielding = true;
  try {
    drain(port);
    for (const dbId of turns.filter((id) => id !== batchDbId)) {
      turns.splice(turns.indexOf(dbId), 1);
      const queue = queues.get(dbId) as Request[];
      serveHead(port, queue);
      drain(port);
      if (queue.length > 0) turns.push(dbId);
      else queues.delete(dbId);
    }
  } finally {
    yielding = false;
  }
}

port?.on('message', (requests: unknown) => {
  enqueue(requests);
  serve(port);
});
