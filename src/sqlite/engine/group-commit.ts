import { sqliteFull, WritableDatabase } from './writes.js';
import { decodeParams } from './encoding.js';
import { SqliteEngineError } from './errors.js';
import { freesSpace } from './statement-kind.js';
import type { ExecCall, GroupOutcome, WriteOutcome } from './types.js';

/**
 * A guarded database that also commits several queued exec calls at once (group commit; the
 * worker's serveHead decides when). A single-row insert's own work is a few microseconds; its
 * transaction (BEGIN IMMEDIATE, the version bump, the size read, COMMIT and its WAL frames, a
 * checkpoint every 1,000 pages) is most of the rest, and a group pays it once.
 */
export class GroupCommitDatabase extends WritableDatabase {
  /**
   * Exec calls of this database that were queued together, in one IMMEDIATE transaction with one
   * COMMIT (group commit): each call runs in its own SAVEPOINT, so one that fails is rolled back
   * alone and answered as it would have been alone; each applied call bumps the version by one and
   * is answered with its own version and the size it left. Nothing is answered before the COMMIT
   * (the worker replies after this returns). Takes calls until `budgetMs` has gone by since it
   * began (at least one) and returns the outcomes of those it ran, in order; the worker queues the
   * rest again. When the transaction itself is lost (SQLite rolls it back on an interrupted write,
   * a full database or disk; a deferred foreign key fails the COMMIT), nothing of the group was
   * committed: the calls are run again alone or in a smaller group, so each gets the answer it
   * would have had without grouping.
   */
  execGroup(calls: ExecCall[], budgetMs = Infinity): GroupOutcome[] {
    if (calls.length <= 1) return calls.map((call) => this.execAlone(call));
    const started = performance.now();
    const outcomes: (GroupOutcome | undefined)[] = [];
    const applied: { at: number; outcome: WriteOutcome; version: number; sizeBytes: number }[] = [];
    let sizeBytes = this.sizeBytes;
    let lost: { at: number; error: unknown } | undefined;
    let committed = this.version;
    try {
      this.internal.begin.run();
      if (this.reserved.adoptOutsideChanges()) this.statements.clear();
      for (const call of calls) {
        if (outcomes.length > 0 && performance.now() - started >= budgetMs) break;
        const version = this.version + applied.length;
        if (this.maxBytes !== null && sizeBytes > this.maxBytes && !freesSpace(call.sql)) {
          outcomes.push({ ok: false, error: this.sizeError(false, undefined, sizeBytes, version) });
          continue;
        }
        this.internal.savepoint.run();
        try {
          const outcome = this.runWrite(call.sql, decodeParams(call.params), this.limits.statementTimeoutMs);
          if (this.reserved.checkAfterWrite()) this.statements.clear();
          this.internal.release.run();
          sizeBytes = this.measure();
          applied.push({ at: outcomes.length, outcome, version: version + 1, sizeBytes });
          outcomes.push(undefined); // answered after the COMMIT
        } catch (err) {
          if (!this.db.inTransaction || sqliteFull(err)) {
            lost = { at: outcomes.length, error: err };
            break;
          }
          this.internal.rollbackTo.run();
          this.internal.release.run();
          // The call's own schema change, if any, is undone: prepared statements follow.
          if (this.reserved.adoptOutsideChanges()) this.statements.clear();
          outcomes.push({ ok: false, error: err });
        }
      }
      if (!lost) {
        // The counter as the file has it (as a single write reads it back), one step per applied call.
        if (applied.length > 0) committed = Number(this.internal.bumpBy.get(BigInt(applied.length)));
        this.internal.commit.run();
      }
    } catch {
      // BEGIN, an engine statement or the COMMIT failed: nothing of the group was committed.
      if (this.db.inTransaction) this.internal.rollback.run();
      return calls.slice(0, Math.max(1, outcomes.length)).map((call) => this.execAlone(call));
    }
    if (lost) {
      if (this.db.inTransaction) this.internal.rollback.run();
      const before = this.execGroup(calls.slice(0, lost.at));
      // An interrupted statement is not run twice: alone it would have run as long and failed so.
      const timedOut = lost.error instanceof SqliteEngineError && lost.error.kind === 'timeout';
      return [
        ...before,
        timedOut ? { ok: false, error: lost.error } : this.execAlone(calls[lost.at] as ExecCall),
      ];
    }
    // Each applied call's version, counted back from the committed counter (the same as the
    // running count unless the file's counter moved apart from memory).
    const shift = committed - this.version - applied.length;
    this.version = committed;
    this.sizeBytes = sizeBytes;
    for (const a of applied) {
      a.version += shift;
      outcomes[a.at] =
        this.maxBytes !== null && a.sizeBytes > this.maxBytes
          ? { ok: false, error: this.sizeError(true, undefined, a.sizeBytes, a.version) }
          : {
              ok: true,
              value: {
                rowsAffected: a.outcome.rowsAffected,
                lastInsertRowId: a.outcome.lastInsertRowId ?? 0,
                version: a.version,
                sizeBytes: a.sizeBytes,
              },
            };
    }
    return outcomes as GroupOutcome[];
  }

  private execAlone(call: ExecCall): GroupOutcome {
    try {
      return { ok: true, value: this.exec(call.sql as string, call.params) };
    } catch (error) {
      return { ok: false, error };
    }
  }
}
