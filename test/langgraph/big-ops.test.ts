import { MemorySaver } from "@langchain/langgraph";
import { type BaseCheckpointSaver, type Checkpoint, type CheckpointTuple, emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import { createExecutionContext, runInDurableObject, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { app } from "../../src/http/app";
import type { ThreadDO } from "../../src/object/thread-object";
import { jsonItems, MAX_LANGGRAPH_JSON_ITEMS } from "../../src/edge/limits";
import { toBase64 } from "../../src/langgraph-client/base64";
import { MAX_VERSIONS_BYTES } from "../../src/thread/langgraph-checkpoints";
import { threadObjectName } from "../../src/thread/thread-id";
import { checkpointPut } from "../support/checkpoint-put";
import { countingLimiter } from "../support/counting-limiter";
import { authHeaders, createTenant } from "../support/tenants";
import { saverFor } from "./support";

/**
 * One LangGraph op may hold far more than the 10,000 JSON items other bodies are held to: a task
 * that writes 5,000 times (a node returning 5,000 `Send`s), a checkpoint of 3,000 channels. Both are
 * stored whole, in the thread's object, and read back as MemorySaver reads them; past
 * MAX_LANGGRAPH_JSON_ITEMS the request is 400 BEM-014 and stores nothing; the byte caps and the rate
 * charge per item still hold.
 */
const range = (n: number) => Array.from({ length: n }, (_, i) => i);
const meta = { source: "loop" as const, step: 1, parents: {} };

/** The same ops on any saver: a checkpoint of 3,000 changed channels, then one task's 5,000 writes. */
async function bigOps(saver: BaseCheckpointSaver, thread: string, id: string) {
  const channels = range(3000).map((i) => `channel-${i}`);
  const cp: Checkpoint = {
    ...emptyCheckpoint(),
    id,
    ts: "2026-12-02T00:00:00.000Z",
    channel_values: Object.fromEntries(channels.map((c, i) => [c, { i, text: `value of ${c}` }])),
    channel_versions: Object.fromEntries(channels.map((c) => [c, 1])),
  };
  const config = await saver.put({ configurable: { thread_id: thread, checkpoint_ns: "" } }, cp, meta, cp.channel_versions);
  await saver.putWrites(
    config,
    range(5000).map((i) => [`out-${i % 7}`, { i }] as [string, unknown]),
    "fan-out-task",
  );
  return config;
}

/** What a tuple says, without the saver-specific config fields. */
const shape = (t: CheckpointTuple | undefined) =>
  t && { checkpoint: t.checkpoint, metadata: t.metadata, pendingWrites: t.pendingWrites, id: t.config.configurable?.checkpoint_id };

async function call(key: string, thread: string, ops: unknown[], vars: Partial<Env> = {}): Promise<Response> {
  const ctx = createExecutionContext();
  const req = new Request(`http://x/v1/langgraph/threads/${thread}/batch`, { method: "POST", headers: authHeaders(key), body: JSON.stringify({ ops }) });
  const res = await app.fetch(req, { ...env, ...vars }, ctx);
  await waitOnExecutionContext(ctx);
  return res;
}
const codeOf = async (res: Response) => ((await res.json()) as { error: { code: string } }).error.code;
const b64 = (o: unknown) => btoa(JSON.stringify(o));
/** A checkpoint whose one channel holds `blob` (base64). */
const put = (id: string, blob: string) => ({
  ...checkpointPut(),
  id,
  versions: { doc: "1" },
  blobs: [{ channel: "doc", version: "1", value: { t: "bytes", b: blob } }],
});
const writes = (checkpointId: string, n: number, value = { t: "json", b: b64(1) }, task = "t") => ({
  op: "writes",
  ns: "",
  checkpoint_id: checkpointId,
  task_id: task,
  task_path: "",
  writes: range(n).map((i) => ({ channel: `c${i % 10}`, idx: i, value })),
});
const storedWrites = async (key: string, thread: string) => {
  const ctx = createExecutionContext();
  const req = new Request(`http://x/v1/langgraph/threads/${thread}/get`, { method: "POST", headers: authHeaders(key), body: "{}" });
  const res = await app.fetch(req, env, ctx);
  await waitOnExecutionContext(ctx);
  return ((await res.json()) as { tuple: { writes: unknown[] } | null }).tuple?.writes.length ?? 0;
};

describe("LangGraph ops past 10,000 JSON items", () => {
  it("a 3,000-channel checkpoint and one task's 5,000 writes are stored and read back as MemorySaver reads them", async () => {
    const t = await createTenant();
    const saver = saverFor(t.adminKey);
    const reference = new MemorySaver();
    const id = uuid6(-1);
    const config = await bigOps(saver, "big-ops", id);
    await bigOps(reference, "big-ops", id);
    // Regular writes settle once queued: a read of the same saver sends them and reports a failure.
    await saver.getTuple(config);
    // A fresh saver reads what the server stored (nothing from the first one's memory).
    const fresh = saverFor(t.adminKey);
    const got = await fresh.getTuple(config);
    const want = await reference.getTuple({ configurable: { thread_id: "big-ops", checkpoint_ns: "" } });
    expect(Object.keys(got!.checkpoint.channel_values)).toHaveLength(3000);
    expect(got!.pendingWrites).toHaveLength(5000);
    expect(shape(got)).toEqual(shape(want));
    const listed: CheckpointTuple[] = [];
    for await (const c of fresh.list({ configurable: { thread_id: "big-ops" } })) listed.push(c);
    const listedRef: CheckpointTuple[] = [];
    for await (const c of reference.list({ configurable: { thread_id: "big-ops" } })) listedRef.push(c);
    expect(listed.map(shape)).toEqual(listedRef.map(shape));
  }, 120_000);

  it(`a writes op at MAX_LANGGRAPH_JSON_ITEMS (${MAX_LANGGRAPH_JSON_ITEMS}) is stored; one write more is 400 BEM-014 and nothing of it stored`, async () => {
    const t = await createTenant();
    const thread = "at-the-cap";
    expect((await call(t.adminKey, thread, [put("1ef-0001", b64(1))])).status).toBe(200);
    // The envelope's key, the op as an item and its 6 keys (8), then 6 per write: the most that fit.
    const most = Math.floor((MAX_LANGGRAPH_JSON_ITEMS - 8) / 6);
    const atCap = [writes("1ef-0001", most, undefined, "full")];
    expect(jsonItems({ ops: atCap })).toBeLessThanOrEqual(MAX_LANGGRAPH_JSON_ITEMS);
    const res = await call(t.adminKey, thread, atCap);
    expect(res.status, await res.clone().text()).toBe(200);
    expect(await storedWrites(t.adminKey, thread)).toBe(most);

    const over = [writes("1ef-0001", most + 1, undefined, "over")];
    expect(jsonItems({ ops: over })).toBeGreaterThan(MAX_LANGGRAPH_JSON_ITEMS);
    const refused = await call(t.adminKey, thread, over);
    expect(refused.status).toBe(400);
    expect(await codeOf(refused)).toBe("BEM-014");
    expect(await storedWrites(t.adminKey, thread)).toBe(most);
  }, 120_000);

  it("5,000 writes still count one request per 10 (500); past the allowance 429 BEM-024, nothing stored", async () => {
    const t = await createTenant();
    const thread = "charged";
    expect((await call(t.adminKey, thread, [put("1ef-0001", b64(1))])).status).toBe(200);
    const { limiter, counts } = countingLimiter();
    expect((await call(t.adminKey, thread, [writes("1ef-0001", 5000, undefined, "a")], { RATE_LIMIT_LANGGRAPH: limiter })).status).toBe(200);
    expect(counts.get(`key:${t.adminKeyId}`)).toBe(500);
    const { limiter: short } = countingLimiter(499);
    const refused = await call(t.adminKey, thread, [writes("1ef-0001", 5000, undefined, "b")], { RATE_LIMIT_LANGGRAPH: short });
    expect(refused.status).toBe(429);
    expect(await codeOf(refused)).toBe("BEM-024");
    expect(await storedWrites(t.adminKey, thread)).toBe(5000);
  }, 120_000);

  it("5,000 writes past a checkpoint's MAX_THREAD_BYTES: 413 BEM-097, nothing of them stored", async () => {
    const t = await createTenant();
    const thread = "too-wide";
    expect((await call(t.adminKey, thread, [put("1ef-0001", toBase64(new Uint8Array(9 * 1024 * 1024).fill(1)))])).status).toBe(200);
    // 5,000 writes of 1,500 bytes: 7.5 MB more than the 9 MiB value, past 16 MiB; the body is ~10 MB.
    const value = { t: "bytes", b: toBase64(new Uint8Array(1500).fill(2)) };
    const res = await call(t.adminKey, thread, [writes("1ef-0001", 5000, value)]);
    expect(res.status).toBe(413);
    expect(await codeOf(res)).toBe("BEM-097");
    expect(await storedWrites(t.adminKey, thread)).toBe(0);
  }, 120_000);

  it("a checkpoint row stays within one chunk: the body is chunked once it and the versions pass it; versions past MAX_VERSIONS_BYTES are 413 BEM-147", async () => {
    const t = await createTenant();
    const version = "1".padStart(32, "0") + ".1234567890123456";
    const versionsOf = (n: number) => Object.fromEntries(range(n).map((i) => [`channel-${i}`, version]));
    // ~43 KB of versions and a ~40 KB body: each under the tests' 64 KiB chunk, together over it.
    const versions = versionsOf(700);
    const body = { t: "json", b: toBase64(new Uint8Array(40_000).fill(3)) };
    const res = await call(t.adminKey, "row", [{ ...put("1ef-0001", b64(1)), versions, checkpoint: body }]);
    expect(res.status, await res.clone().text()).toBe(200);
    const stub = env.THREADS.get(env.THREADS.idFromName(threadObjectName(t.tenant, "row")));
    const row = await runInDurableObject(stub, (_o, state) =>
      state.storage.sql.exec<{ body: number | null; body_chunks: number }>(`SELECT LENGTH(body) AS body, body_chunks FROM lg_checkpoints`).one(),
    );
    expect(row.body_chunks).toBeGreaterThan(0);
    const got = await app.fetch(new Request("http://x/v1/langgraph/threads/row/get", { method: "POST", headers: authHeaders(t.adminKey), body: "{}" }), env);
    expect(((await got.json()) as { tuple: { checkpoint: unknown } }).tuple.checkpoint).toEqual(body);

    // ~20,000 channels: versions past 1 MiB, well within the JSON items.
    const wide = versionsOf(20_000);
    expect(JSON.stringify(wide).length).toBeGreaterThan(MAX_VERSIONS_BYTES);
    const over = await call(t.adminKey, "row-over", [{ ...put("1ef-0001", b64(1)), versions: wide }]);
    expect(over.status).toBe(413);
    expect(await codeOf(over)).toBe("BEM-147");
    expect(await storedWrites(t.adminKey, "row-over")).toBe(0);
    const none = await app.fetch(
      new Request("http://x/v1/langgraph/threads/row-over/get", { method: "POST", headers: authHeaders(t.adminKey), body: "{}" }),
      env,
    );
    expect(((await none.json()) as { tuple: unknown }).tuple).toBeNull();
  }, 120_000);
  it("the running total of bytes held (what MAX_THREAD_HISTORY_BYTES is checked against) counts channel versions in UTF-8 bytes, non-ASCII channel names too", async () => {
    const t = await createTenant();
    // 300 channels named in CJK: ~6,300 UTF-16 code units of versions JSON, ~12,300 UTF-8 bytes.
    const versions = Object.fromEntries(range(300).map((i) => [`頻道頻道頻道頻道頻道-${i}`, "1"]));
    const json = JSON.stringify(versions);
    expect(new TextEncoder().encode(json).byteLength).toBeGreaterThan(json.length + 5000);
    const op = { ...checkpointPut(), id: "1ef-0001", versions, blobs: [] };
    // The running total is the rows' bytes, and stays so when the admin replaces the checkpoint (its body now chunked);
    // the total summed from the tables (where it starts, and restarts after a prune) agrees.
    expect((await call(t.adminKey, "utf8", [op])).status).toBe(200);
    const chunked = { t: "bytes", b: toBase64(new Uint8Array(70_000).fill(5)) };
    expect((await call(t.adminKey, "utf8", [{ ...op, versions: { ...versions, 通道: "2" }, checkpoint: chunked }])).status).toBe(200);
    const stub = env.THREADS.get(env.THREADS.idFromName(threadObjectName(t.tenant, "utf8")));
    const [held, rows, summed] = await runInDurableObject(stub, (d: ThreadDO, state) => {
      const one = (q: string) => state.storage.sql.exec<{ n: number }>(q).one().n;
      return [
        Number(state.storage.sql.exec<{ value: string }>(`SELECT value FROM meta WHERE key = 'lg_bytes'`).one().value),
        one(`SELECT SUM(LENGTH(CAST(versions AS BLOB)) + COALESCE(LENGTH(body), 0) + COALESCE(LENGTH(meta), 0)) AS n FROM lg_checkpoints`) +
          one(`SELECT SUM(LENGTH(data)) AS n FROM lg_chunks`),
        (d.lgStoredBytes() as { value: number }).value,
      ];
    });
    expect(held).toBe(rows);
    expect(summed).toBe(rows);
  });
});
