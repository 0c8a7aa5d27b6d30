import { ThreadDO as ThreadObjectBase } from "../thread/thread-do";
import { assertThreadRoom } from "../auth/quotas";
import { factsSession, newerBookmark } from "../memory/bookmark";
import { AppError } from "../core/errors";
import { conversationExists } from "../thread/thread-list";
import { ThreadClient, type ThreadRun } from "../thread/client";
import { threadObjectName } from "../thread/thread-id";
import { reconcileTurn } from "./reconcile";
import { runTurn, type StreamHooks } from "./run";
import { encodeEvent, toWireError, type ObjectRunRequest, type RunEvent } from "./run-wire";
import { Timings } from "./timings";
import { errorText, log } from "../core/log";

/**
 * The thread's Durable Object with the agent run inside it. A Worker hands a stateful
 * turn over in one RPC (runTurn); from there the lease, the window, the facts (D1, from
 * here), middleware, the provider calls, server tools and the save all happen in this
 * object, against its own SQLite, without further hops. The storage half is
 * src/thread/thread-do.ts; this adds only the run.
 */
export class ThreadDO extends ThreadObjectBase {
  /**
   * Runs one turn; answers a stream of RunEvents (run-wire.ts). The run does not depend
   * on the stream being read: a caller that goes away does not stop the save.
   */
  runTurn(req: ObjectRunRequest): ReadableStream<Uint8Array> {
    const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
    const writer = writable.getWriter();
    let gone = false;
    // Not awaited: the writer queues in order, and a reader that stopped must not stall the run.
    const send = (ev: RunEvent) => {
      if (!gone) writer.write(encodeEvent(ev)).catch(() => (gone = true));
    };
    const after: Promise<unknown>[] = [];
    const work = (async () => {
      const { input } = req;
      const threadId = input.threadId;
      // The Worker names this object from (tenant, thread); a run for another thread never runs here.
      if (
        threadId === undefined ||
        input.principal.kind !== "tenant" ||
        !this.ctx.id.equals(this.env.THREADS.idFromName(threadObjectName(input.principal.tenant, threadId)))
      ) {
        send({ t: "error", error: { code: "BEM-001", message: "Internal error", internal: "run sent to the wrong thread object" } });
        return;
      }
      // Facts at least as fresh as this thread's previous turn and as the client's own writes.
      const bookmark = newerBookmark(this.factsBookmark(), input.bookmark);
      const facts = factsSession(this.env.DB, bookmark);
      // D1 writes after the answer (usage, thread list) leave together: one batch, not one call each.
      const writes: { stmt: D1PreparedStatement; what: string }[] = [];
      const bookkeeping = (stmt: D1PreparedStatement, what: string) => void writes.push({ stmt, what });
      const deps = { env: this.env, waitUntil: (p: Promise<unknown>) => void after.push(p.catch(() => undefined)), local: this, facts, bookkeeping };
      const hooks: StreamHooks | undefined = req.stream
        ? { start: (model, route) => send({ t: "start", model, reason: route.reason }), delta: (ev) => send({ t: "delta", ev }) }
        : undefined;
      let held: ThreadRun | undefined;
      try {
        // This run's turn on the thread first (FIFO, BEM-038 past the wait): what it continues from —
        // reconciliation, previous_response_id — is decided under its lease, against the head it will extend.
        held = await new ThreadClient(this.env, input.principal.tenant, threadId, { local: this }).beginRun();
        // A run that would create the thread must fit the tenant's thread quota (413 BEM-017, nothing written); existing threads always take turns.
        if (this.headId() === null) {
          // A named conversation with history exists; only an empty one needs its D1 record (no read on a turn of a live one).
          if (input.conversation && !(await conversationExists(this.env.DB, input.principal.tenant, threadId)))
            throw new AppError("BEM-102", `No conversation '${threadId.slice(0, 80)}'`);
          await assertThreadRoom(this.env, input.principal.tenant, threadId, req.threadQuota);
        }
        // A client that resends history: only the new part is stored (or a branch taken), decided here against this thread's own rows.
        const { input: turn, report } = input.resent
          ? await reconcileTurn(this.env, input, this, held)
          : { input: input.previousResponse ? this.afterResponse(input, input.previousResponse) : input, report: null };
        const { timings, state: _state, ...rest } = await runTurn({ ...deps, held }, { ...this.continued(turn), timings: new Timings() }, hooks);
        send({ t: "done", result: { ...rest, reconciled: report, timings: timings.entries } });
      } catch (e) {
        send({ t: "error", error: toWireError(e) });
      } finally {
        // A save with endRun released it already (then this does nothing); any failure gives it back here.
        await held?.end();
      }
      this.rememberBookmark(newerBookmark(bookmark, facts.getBookmark()));
      // Bookkeeping (thread list, usage) after the answer, still inside this call.
      while (after.length > 0 || writes.length > 0) {
        const batch = writes.splice(0);
        if (batch.length > 0)
          after.push(
            this.env.DB.batch(batch.map((w) => w.stmt)).catch((e: unknown) =>
              log.error("bookkeeping", { writes: batch.map((w) => w.what), message: errorText(e) }),
            ),
          );
        await Promise.all(after.splice(0));
      }
    })();
    work.finally(() => writer.close().catch(() => undefined)).catch(() => undefined);
    return readable;
  }

  /** A run continuing a stored Response continues from its checkpoint; the input may answer only the calls that response made. */
  private afterResponse(input: ObjectRunRequest["input"], previous: { id: string; answers: string[] }): ObjectRunRequest["input"] {
    const stored = this.storedResponse(previous.id);
    if (!stored) throw new AppError("BEM-100", `No response '${previous.id.slice(0, 80)}'`);
    const unknown = previous.answers.find((id) => !stored.call_ids.includes(id));
    if (unknown !== undefined)
      throw new AppError("BEM-101", `function_call_output for unknown call_id '${unknown.slice(0, 80)}': no earlier function_call made it`);
    const { previousResponse: _resolved, ...rest } = input;
    return { ...rest, continueFrom: stored.checkpoint_id };
  }

  /** `continueFrom` at the head is a plain continuation; anywhere else it is a branch there (prepare then checks the rewrite right). */
  private continued(input: ObjectRunRequest["input"]): ObjectRunRequest["input"] {
    const { continueFrom, ...rest } = input;
    if (continueFrom === undefined || continueFrom === this.headId()) return rest;
    return { ...rest, checkpointId: continueFrom };
  }

  /**
   * The newest facts bookmark a run of this thread has seen (kept in the meta table), read
   * from storage once per object lifetime: only this object writes it, so the copy in
   * memory stays current (profiled: two SQL statements per turn otherwise).
   */
  private seenBookmark: { value: string | undefined } | undefined;

  private factsBookmark(): string | undefined {
    if (this.seenBookmark) return this.seenBookmark.value;
    try {
      this.seenBookmark = { value: this.ctx.storage.sql.exec<{ value: string }>(`SELECT value FROM meta WHERE key = 'facts_bookmark'`).toArray()[0]?.value };
      return this.seenBookmark.value;
    } catch {
      return undefined; // a deleted thread has no tables until its next write
    }
  }

  private rememberBookmark(bookmark: string | undefined): void {
    if (!bookmark || bookmark === this.factsBookmark()) return;
    // Kept in memory even if the write below fails: a newer bookmark only makes reads fresher.
    this.seenBookmark = { value: bookmark };
    try {
      this.ctx.storage.sql.exec(`INSERT INTO meta (key, value) VALUES ('facts_bookmark', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`, bookmark);
    } catch {
      // The thread was deleted meanwhile: nothing to keep the bookmark for.
    }
  }
}
