import { access } from "../edge/access";
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { AppError } from "../core/errors";
import type { AppEnv } from "../edge/app-env";
import { errorResponses, jsonContent } from "../edge/openapi-errors";
import { chargeOps } from "../auth/rate-limit";
import { validationHook } from "../edge/validation";
import { fromBase64, toBase64 } from "../langgraph-client/base64";
import { parseThreadId, threadStub } from "../thread/thread-id";
import { unwrap } from "../core/wire-error";
import { quotaOf } from "../auth/quotas";
import { openCursor, sealCursor } from "../core/cursor";
import { langgraphTenant, mayReachThread, refuseIdsAhead, requireThread, writerOf } from "./access";
import {
  BatchBody,
  DeltaBody,
  GetBody,
  itemsOf,
  ListAllBody,
  ListBody,
  PruneBody,
  TypedWire,
  type DeltaHistory,
  type Head,
  type LgOp,
  type StoredTuple,
  type StoredWrite,
  type Typed,
} from "../thread/langgraph-checkpoint-types";
import { LG_PAGE_BYTES, sizeOfTuple } from "../thread/langgraph-checkpoints";
import { authorize, readableThreads } from "../auth/policy";
import { indexedThreads } from "../thread/langgraph-index";

const ThreadParam = z.object({
  thread_id: z.string().openapi({ param: { name: "thread_id", in: "path" }, description: "1-128 chars of A-Z a-z 0-9 . _ : -" }),
});

const WriteWire = z.object({ task_id: z.string(), channel: z.string(), value: TypedWire });
const TupleWire = z
  .object({
    thread_id: z.string(),
    ns: z.string(),
    id: z.string(),
    parent_id: z.string().nullable(),
    checkpoint: TypedWire,
    metadata: TypedWire,
    blobs: z.array(z.object({ channel: z.string(), value: TypedWire })),
    writes: z.array(WriteWire),
    sends: z.array(TypedWire).optional(),
  })
  .openapi("LangGraphTuple");
const TuplesWire = z.object({
  tuples: z.array(TupleWire),
  next_threads_after: z.string().optional().openapi({
    description:
      "Cross-thread list with `threads_after`: present when more of the tenant's threads follow this request's window; once its tuples are read (no `next_before`), pass it as `threads_after` (and the first `before` again) for the next window",
  }),
  next_before: z
    .string()
    .optional()
    .openapi({
      description: `Present when the page was cut (about ${LG_PAGE_BYTES / 1024 / 1024} MiB a page, or 1,000 checkpoints across threads without a limit): pass it as \`before\` for the next page`,
    }),
});
const HistoryWire = z.record(z.string(), z.object({ seed: TypedWire.optional(), writes: z.array(WriteWire) })).openapi("LangGraphDeltaHistory");

const toWire = (v: Typed) => ({ t: v.t, b: toBase64(v.b) });
const fromWire = (v: { t: string; b: string }): Typed => ({ t: v.t, b: fromBase64(v.b) });
const writeWire = (w: StoredWrite) => ({ task_id: w.task_id, channel: w.channel, value: toWire(w.value) });
const tupleWire = (threadId: string, t: StoredTuple) => ({
  thread_id: threadId,
  ns: t.ns,
  id: t.id,
  parent_id: t.parent_id,
  checkpoint: toWire(t.checkpoint),
  metadata: toWire(t.metadata),
  blobs: t.blobs.map((b) => ({ channel: b.channel, value: toWire(b.value) })),
  writes: t.writes.map(writeWire),
  ...(t.sends ? { sends: t.sends.map(toWire) } : {}),
});
const historyWire = (h: DeltaHistory) =>
  Object.fromEntries(Object.entries(h).map(([ch, e]) => [ch, { ...(e.seed ? { seed: toWire(e.seed) } : {}), writes: e.writes.map(writeWire) }]));

/** The thread's object, after the id and the key's reach are checked. */
function threadFor(c: { env: Env; get(k: "principal"): AppEnv["Variables"]["principal"] }, rawId: string) {
  const threadId = parseThreadId(rawId);
  const tenant = requireThread(c.get("principal"), threadId);
  return { tenant, threadId, stub: threadStub(c.env, tenant, threadId) };
}

const body = <T extends z.ZodType>(schema: T) => ({ body: { required: true, content: { "application/json": { schema } } } });

const batch = createRoute({
  method: "post",
  path: "/v1/langgraph/threads/{thread_id}/batch",
  middleware: access("reach_thread", "langgraph", { rate: "langgraph" }),
  tags: ["langgraph"],
  summary: "Store checkpoints and pending writes, in order, atomically",
  request: { params: ThreadParam, ...body(BatchBody) },
  responses: {
    200: jsonContent(z.object({ ok: z.literal(true) }), "Stored"),
    ...errorResponses("BEM-017", "BEM-022", "BEM-025", "BEM-030", "BEM-038", "BEM-147", "BEM-148"),
  },
});
const getTuple = createRoute({
  method: "post",
  path: "/v1/langgraph/threads/{thread_id}/get",
  middleware: access("reach_thread", "small", { rate: "langgraph" }),
  tags: ["langgraph"],
  summary: "A checkpoint tuple (latest of the namespace without checkpoint_id)",
  request: { params: ThreadParam, ...body(GetBody) },
  responses: {
    200: jsonContent(z.object({ tuple: TupleWire.nullable(), history: HistoryWire.optional() }), "The tuple, or null"),
    ...errorResponses("BEM-022", "BEM-025", "BEM-030"),
  },
});
const listThread = createRoute({
  method: "post",
  path: "/v1/langgraph/threads/{thread_id}/list",
  middleware: access("reach_thread", "small", { rate: "langgraph" }),
  tags: ["langgraph"],
  summary: "Checkpoint tuples of a thread, newest first",
  request: { params: ThreadParam, ...body(ListBody) },
  responses: { 200: jsonContent(TuplesWire, "Tuples"), ...errorResponses("BEM-022", "BEM-025", "BEM-030") },
});
const listAll = createRoute({
  method: "post",
  path: "/v1/langgraph/list",
  middleware: access("reach_thread", "small", { rate: "langgraph" }),
  tags: ["langgraph"],
  summary: "Checkpoint tuples across the tenant's threads the key reaches, newest first, in windows of 100 threads",
  request: body(ListAllBody),
  responses: { 200: jsonContent(TuplesWire, "Tuples"), ...errorResponses("BEM-022", "BEM-132") },
});
const deltaHistory = createRoute({
  method: "post",
  path: "/v1/langgraph/threads/{thread_id}/delta-history",
  middleware: access("reach_thread", "small", { rate: "langgraph" }),
  tags: ["langgraph"],
  summary: "DeltaChannel history: writes along the parent chain back to a stored seed",
  request: { params: ThreadParam, ...body(DeltaBody) },
  responses: {
    200: jsonContent(z.object({ history: HistoryWire }), "Per channel: seed and writes, oldest first"),
    ...errorResponses("BEM-022", "BEM-025", "BEM-030", "BEM-145"),
  },
});
const deleteThread = createRoute({
  method: "delete",
  path: "/v1/langgraph/threads/{thread_id}",
  middleware: access("rewrite_thread", "none", { rate: "langgraph" }),
  tags: ["langgraph"],
  summary: "Delete the thread's LangGraph checkpoints (edgeweave's own turns stay); rewrites history",
  request: { params: ThreadParam },
  responses: { 204: { description: "Deleted" }, ...errorResponses("BEM-022", "BEM-025", "BEM-030", "BEM-036", "BEM-038") },
});
const pruneThread = createRoute({
  method: "post",
  path: "/v1/langgraph/threads/{thread_id}/prune",
  middleware: access("rewrite_thread", "small", { rate: "langgraph" }),
  tags: ["langgraph"],
  summary: "Delete old checkpoints (keep the newest N per namespace, or those from a checkpoint on); the thread stays resumable; rewrites history",
  request: { params: ThreadParam, ...body(PruneBody) },
  responses: {
    200: jsonContent(z.object({ deleted: z.number().int(), kept: z.number().int() }), "Checkpoints deleted and kept"),
    ...errorResponses("BEM-022", "BEM-025", "BEM-030", "BEM-032"),
  },
});

/** Threads asked in parallel by a cross-thread list. */
const SCAN_PAGE = 50;
/**
 * Threads one cross-thread list request visits (one call to each one's object): it had visited every
 * thread the key reaches, 100,000 calls for one request. More are paged by threads (`threads_after`).
 */
export const LIST_THREADS = 100;
/** The list name checked in a next_threads_after (src/core/cursor.ts). */
const THREAD_WINDOWS = "langgraph_threads";
/** Checkpoints a cross-thread list without `limit` returns per page (the saver asks 200 at a time). */
const LIST_ALL_PAGE = 1000;

/** Tuples of one thread, in the order given, as far as the page's byte budget reaches. */
async function tuplesOf(env: Env, tenant: string, threadId: string, heads: Head[], maxBytes: number, atLeastOne: boolean): Promise<StoredTuple[]> {
  return unwrap(await threadStub(env, tenant, threadId).lgTuples(heads, maxBytes, atLeastOne));
}

/** LangGraph's checkpointer over HTTP (EdgeweaveSaver is the client). */
export const checkpointRoutes = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(batch, async (c) => {
    const { tenant, threadId, stub } = threadFor(c, c.req.valid("param").thread_id);
    // Counted by items (a put's blobs, a writes op's writes), not ops, so a few ops cannot carry unbounded rows for one count.
    await chargeOps(
      c.env,
      c.get("principal"),
      c.req.valid("json").ops.reduce((n, op) => n + itemsOf(op), 0),
      { rate: "langgraph" },
    );
    const writer = writerOf(c.get("principal"), threadId);
    refuseIdsAhead(
      c.req.valid("json").ops.flatMap((op) => (op.op === "put" ? [op.id] : [])),
      writer,
    );
    const ops: LgOp[] = c.req.valid("json").ops.map((op) =>
      op.op === "put"
        ? {
            ...op,
            checkpoint: fromWire(op.checkpoint),
            metadata: fromWire(op.metadata),
            blobs: op.blobs.map((b) => ({ channel: b.channel, version: b.version, value: b.value ? fromWire(b.value) : null })),
          }
        : { ...op, writes: op.writes.map((w) => ({ channel: w.channel, idx: w.idx, value: fromWire(w.value) })) },
    );
    // A put that creates the thread is checked against the thread quota and indexed in the object, under its lease.
    unwrap(await stub.lgApply(ops, writer, { tenant, threadId, threadQuota: quotaOf(c.env, "threads") }));
    return c.json({ ok: true as const }, 200);
  })
  .openapi(getTuple, async (c) => {
    const { threadId, stub } = threadFor(c, c.req.valid("param").thread_id);
    const found = unwrap(await stub.lgGet(c.req.valid("json")));
    if (!found) return c.json({ tuple: null }, 200);
    return c.json({ tuple: tupleWire(threadId, found.tuple), ...(found.history ? { history: historyWire(found.history) } : {}) }, 200);
  })
  .openapi(listThread, async (c) => {
    const { threadId, stub } = threadFor(c, c.req.valid("param").thread_id);
    const page = unwrap(await stub.lgList(c.req.valid("json")));
    return c.json({ tuples: page.tuples.map((t) => tupleWire(threadId, t)), ...(page.next_before ? { next_before: page.next_before } : {}) }, 200);
  })
  .openapi(listAll, async (c) => {
    const principal = c.get("principal");
    const tenant = langgraphTenant(principal);
    const { threads_after, ...q } = c.req.valid("json");
    const want = q.limit ?? LIST_ALL_PAGE;
    // This request's window of threads: the grants are in the query (a member's few threads never cost
    // a scan of the tenant's); the policy checks each again.
    // "" starts the first window; every other value must be a next_threads_after this list handed out (BEM-011 otherwise).
    const after = threads_after ? openCursor(THREAD_WINDOWS, threads_after, "threads_after") : "";
    const ids = await indexedThreads(c.env.DB, tenant, after, LIST_THREADS + 1, readableThreads(principal));
    const window = ids.slice(0, LIST_THREADS).filter((id) => mayReachThread(principal, id));
    const moreThreads = ids.length > LIST_THREADS;
    if (moreThreads && threads_after === undefined)
      throw new AppError(
        "BEM-132",
        `This list reaches more than ${LIST_THREADS} LangGraph threads, the most one request visits: page by threads with \`threads_after\` ("" first, then each answer's \`next_threads_after\`), as EdgeweaveSaver does, or name a thread`,
      );
    // Each thread visited is a call to its object: counted as the key's requests, one per started 10.
    await chargeOps(c.env, principal, window.length, { rate: "langgraph" });
    // First the ids: every thread of the window names its newest `want`, the merge keeps the newest
    // overall. Then the values, newest first, as far as one page's bytes reach — so no RPC and no
    // response grows with the tenant's data.
    let heads: (Head & { threadId: string })[] = [];
    let more = false;
    for (let at = 0; at < window.length; at += SCAN_PAGE) {
      const found = await Promise.all(
        window
          .slice(at, at + SCAN_PAGE)
          .map(async (id) => unwrap(await threadStub(c.env, tenant, id).lgHeads({ ...q, limit: want })).map((h) => ({ ...h, threadId: id }))),
      );
      heads = heads.concat(...found).sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
      if (heads.length > want) (more = true), (heads = heads.slice(0, want));
    }
    const out: { threadId: string; t: StoredTuple }[] = [];
    let budget = LG_PAGE_BYTES;
    for (let at = 0; at < heads.length; ) {
      const threadId = heads[at]!.threadId;
      let end = at;
      while (end < heads.length && heads[end]!.threadId === threadId) end++;
      const run = heads.slice(at, end);
      const tuples = await tuplesOf(c.env, tenant, threadId, run, budget, out.length === 0);
      for (const t of tuples) out.push({ threadId, t }), (budget -= sizeOfTuple(t));
      if (tuples.length < run.length) {
        more = true;
        break;
      }
      at = end;
    }
    const cut = more && q.limit === undefined ? true : out.length < heads.length;
    const next = cut && out.length > 0 ? { next_before: out[out.length - 1]!.t.id } : {};
    const nextThreads = moreThreads ? { next_threads_after: sealCursor(THREAD_WINDOWS, ids[LIST_THREADS - 1]!) } : {};
    return c.json({ tuples: out.map((f) => tupleWire(f.threadId, f.t)), ...next, ...nextThreads }, 200);
  })
  .openapi(deltaHistory, async (c) => {
    const { stub } = threadFor(c, c.req.valid("param").thread_id);
    const history = unwrap(await stub.lgDeltaHistory(c.req.valid("json")));
    return c.json({ history: historyWire(history) }, 200);
  })
  .openapi(pruneThread, async (c) => {
    const { threadId, stub } = threadFor(c, c.req.valid("param").thread_id);
    authorize(c.get("principal"), "rewrite_thread", { thread: threadId });
    return c.json(unwrap(await stub.lgPrune(c.req.valid("json"))), 200);
  })
  .openapi(deleteThread, async (c) => {
    const { tenant, threadId, stub } = threadFor(c, c.req.valid("param").thread_id);
    authorize(c.get("principal"), "rewrite_thread", { thread: threadId });
    const { existed } = unwrap(await stub.lgDelete({ tenant, threadId }));
    if (!existed) throw new AppError("BEM-036", `No LangGraph checkpoints in thread '${threadId}'`);
    return c.body(null, 204);
  });
