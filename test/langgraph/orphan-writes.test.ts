import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { uuid6Prefix } from "../../src/core/checkpoint-clock";
import type { ThreadDO } from "../../src/object/thread-object";
import { threadObjectName } from "../../src/thread/thread-id";
import { checkpointPut } from "../support/checkpoint-put";
import { api } from "../support/tenants";
import { freshMember } from "./support";

/**
 * Pending writes to a checkpoint id not stored yet. LangGraph's own savers take them (MemorySaver keys
 * writes by id alone), and LangGraph sends them: its loop chains each put after the one before while
 * a task's writes go out at once, so a fork's resume write can reach the saver before the fork's put.
 * So they are taken while that put can still come from the writer; they count against the thread's
 * caps like any write, and a prune drops those whose checkpoint never came.
 */
const b64 = (o: unknown) => btoa(JSON.stringify(o));
const uuid6At = (ms: number, node = "000000000000") => `${uuid6Prefix(ms)}-8000-${node}`;
const put = (id: string, parent: string | null) => ({ ...checkpointPut(), id, parent_id: parent });
const writes = (checkpointId: string, note: string) => ({
  op: "writes",
  ns: "",
  checkpoint_id: checkpointId,
  task_id: "task",
  task_path: "",
  writes: [{ channel: "note", idx: 0, value: { t: "json", b: b64(note) } }],
});
const batch = (key: string, thread: string, ops: unknown[]) => api(`/v1/langgraph/threads/${thread}/batch`, { key, body: { ops } });
const writesOn = async (key: string, thread: string, id: string) => {
  const body = (await (await api(`/v1/langgraph/threads/${thread}/get`, { key, body: { checkpoint_id: id } })).json()) as {
    tuple: { writes: { value: { b: string } }[] } | null;
  };
  return body.tuple?.writes.map((w) => JSON.parse(atob(w.value.b)) as string) ?? null;
};
const storedBytes = (tenant: string, thread: string) =>
  runInDurableObject(
    env.THREADS.get(env.THREADS.idFromName(threadObjectName(tenant, thread))),
    (d: ThreadDO) => (d.lgStoredBytes() as { value: number }).value,
  );

async function setUp() {
  const { key: member, tenant: t } = await freshMember();
  return { t, member, thread: `orph-${crypto.randomUUID().slice(0, 8)}` };
}

describe("pending writes to a checkpoint not stored yet", () => {
  it("a fork's writes ahead of its put are taken, and the put that follows carries them", async () => {
    const { t, member, thread } = await setUp();
    const now = Date.now();
    const [a, fork] = [uuid6At(now - 60_000), uuid6At(now)];
    expect((await batch(t.adminKey, thread, [put(a, null)])).status).toBe(200);
    expect((await batch(member, thread, [writes(fork, "resume")])).status).toBe(200);
    expect((await batch(member, thread, [put(fork, a)])).status).toBe(200);
    expect(await writesOn(member, thread, fork)).toEqual(["resume"]);
  });

  it("a member's writes to a checkpoint it could never put (below the newest, outside the skew window) are 403 BEM-022, nothing of the batch stored", async () => {
    // Before, they were stored, where no prune reached them: only deleting the thread freed their bytes.
    const { t, member, thread } = await setUp();
    const now = Date.now();
    const [a, b] = [uuid6At(now - 60 * 60_000), uuid6At(now)];
    expect((await batch(t.adminKey, thread, [put(a, null), put(b, a)])).status).toBe(200);
    const missing = uuid6At(now - 30 * 60_000);
    const res = await batch(member, thread, [writes(b, "ok"), writes(missing, "orphan")]);
    expect(res.status).toBe(403);
    const error = ((await res.json()) as { error: { code: string; message: string } }).error;
    expect(error.code).toBe("BEM-022");
    expect(error.message).toContain(missing);
    expect(await writesOn(member, thread, b)).toEqual([]);
    // Within the skew window below the newest its put may still come (a machine behind): taken.
    expect((await batch(member, thread, [writes(uuid6At(now - 1000), "behind")])).status).toBe(200);
    // An admin (rewrite_thread: an import) writes anywhere.
    expect((await batch(t.adminKey, thread, [writes(missing, "import")])).status).toBe(200);
  });

  it("a prune drops writes whose checkpoint never came, and keeps those of a put still on its way", async () => {
    const { t, thread } = await setUp();
    const now = Date.now();
    const [a, b] = [uuid6At(now - 60 * 60_000), uuid6At(now - 1000)];
    const [stale, coming] = [uuid6At(now - 30 * 60_000), uuid6At(now)];
    expect((await batch(t.adminKey, thread, [put(a, null), put(b, a)])).status).toBe(200);
    const big = "x".repeat(100_000);
    expect((await batch(t.adminKey, thread, [writes(stale, big), { ...writes(coming, "coming"), ns: "sub" }])).status).toBe(200);
    const before = await storedBytes(t.tenant, thread);
    const pruned = await api(`/v1/langgraph/threads/${thread}/prune`, { key: t.adminKey, body: { keep_last: 5 } });
    expect(pruned.status).toBe(200);
    expect(await storedBytes(t.tenant, thread)).toBeLessThan(before - 100_000);
    // The stale id's writes are gone (a put of it later starts clean); the coming one's stay for its put.
    expect((await batch(t.adminKey, thread, [put(stale, a), { ...put(coming, null), ns: "sub" }])).status).toBe(200);
    expect(await writesOn(t.adminKey, thread, stale)).toEqual([]);
    const sub = (await (await api(`/v1/langgraph/threads/${thread}/get`, { key: t.adminKey, body: { ns: "sub", checkpoint_id: coming } })).json()) as {
      tuple: { writes: unknown[] };
    };
    expect(sub.tuple.writes).toHaveLength(1);
  });
});
