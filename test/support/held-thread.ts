import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { TurnIO } from "../../src/pipeline/turn-io";
import { HeldThread } from "../../src/pipeline/held-thread";
import { LangGraphCheckpoints } from "../../src/thread/langgraph-checkpoints";
import { openThreadMeta } from "../../src/thread/sql-schema";
import { ThreadLeases } from "../../src/thread/thread-lease";
import { PendingBookkeeping } from "../../src/thread/pending-bookkeeping";
import { RunRecords } from "../../src/thread/run-records";
import { StoredResponses } from "../../src/thread/stored-responses";
import { threadObjectName } from "../../src/thread/thread-id";
import { ThreadStore } from "../../src/thread/thread-store";

/**
 * Runs `fn` inside thread (tenant, threadId)'s object with a HeldThread over its storage,
 * as a run inside the object holds one (the lease taken, bookkeeping settled after `fn`).
 * The capabilities are a second set over the same SQLite, so read the thread afterwards
 * through its RPC methods (ThreadClient), which re-read the rows.
 */
export function inHeldThread<T>(tenant: string, threadId: string, fn: (room: HeldThread) => Promise<T>): Promise<T> {
  const stub = env.THREADS.get(env.THREADS.idFromName(threadObjectName(tenant, threadId)));
  return runInDurableObject(stub, async (_live, state) => {
    const meta = openThreadMeta(state.storage);
    const parts = {
      meta,
      log: ThreadStore.of(state.storage, { meta }),
      responses: new StoredResponses(state.storage.sql),
      langgraph: new LangGraphCheckpoints(state.storage, meta, 1_900_000),
      bookkeeping: new PendingBookkeeping(state.storage.sql, meta),
      runs: new RunRecords(state.storage.sql),
    };
    const leases = new ThreadLeases();
    const io = new TurnIO(env.DB, undefined);
    const room = new HeldThread({ tenant, threadId, capabilities: parts, leases, lease: await leases.take(0), env, io });
    try {
      return await fn(room);
    } finally {
      room.end();
      await io.settle();
    }
  });
}
