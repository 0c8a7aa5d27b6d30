import { describe, expect, it } from "vitest";
import { toBase64 } from "../../src/langgraph-client/base64";
import { api, createTenant } from "../support/tenants";
import { saverFor } from "./support";

/**
 * Issue #25.3: LangGraph bytes count against the thread caps (MAX_THREAD_BYTES for one
 * checkpoint's values and writes, MAX_THREAD_HISTORY_BYTES for everything stored: 16 and 64 MiB
 * here, the defaults), refused with a coded 413 that stores nothing; and every list is paged, so
 * a thread past Workers RPC's 32 MiB lists (per thread and tenant-wide, without a limit).
 */
const MiB = 1024 * 1024;
const b64 = (o: unknown) => btoa(JSON.stringify(o));
const bytes = (n: number, fill: number) => toBase64(new Uint8Array(n).fill(fill));
const put = (id: string, parent: string | null, blob: string) => ({
  op: "put",
  ns: "",
  id,
  parent_id: parent,
  v: 4,
  versions: { doc: id },
  checkpoint: { t: "json", b: b64({ v: 4, id, ts: "", channel_values: {}, channel_versions: { doc: id }, versions_seen: {} }) },
  metadata: { t: "json", b: b64({}) },
  blobs: [{ channel: "doc", version: id, value: { t: "bytes", b: blob } }],
});
const writes = (checkpointId: string, blob: string) => ({
  op: "writes",
  ns: "",
  checkpoint_id: checkpointId,
  task_id: "t",
  task_path: "",
  writes: [{ channel: "doc", idx: 0, value: { t: "bytes", b: blob } }],
});
const batch = (key: string, thread: string, ops: unknown[]) => api(`/v1/langgraph/threads/${thread}/batch`, { key, body: { ops } });
const codeOf = async (res: Response) => ((await res.json()) as { error: { code: string } }).error.code;
const id = (i: number) => `1ef-${String(i).padStart(4, "0")}`;

describe("LangGraph byte caps and paged lists", () => {
  it("a checkpoint's values and writes past MAX_THREAD_BYTES: 413 BEM-097, the write not stored", async () => {
    const t = await createTenant();
    expect((await batch(t.adminKey, "wide", [put(id(1), null, bytes(9 * MiB, 1))])).status).toBe(200);
    const res = await batch(t.adminKey, "wide", [writes(id(1), bytes(8 * MiB, 2))]);
    expect(res.status).toBe(413);
    expect(await codeOf(res)).toBe("BEM-097");
    const got = (await (await api("/v1/langgraph/threads/wide/get", { key: t.adminKey, body: {} })).json()) as { tuple: { writes: unknown[] } };
    expect(got.tuple.writes).toEqual([]);
  }, 120_000);

  it("a 40 MiB thread lists whole in pages; past MAX_THREAD_HISTORY_BYTES a put is 413 BEM-019 and stores nothing, until pruned", async () => {
    const t = await createTenant();
    const blob = (i: number) => bytes(8 * MiB, i);
    for (let i = 1; i <= 5; i++) expect((await batch(t.adminKey, "huge", [put(id(i), i === 1 ? null : id(i - 1), blob(i))])).status).toBe(200);

    const thread = await api("/v1/langgraph/threads/huge/list", { key: t.adminKey, body: {} });
    expect(thread.status).toBe(200);
    const first = (await thread.json()) as { tuples: { id: string }[]; next_before?: string };
    expect(first.tuples.length).toBeLessThan(5);
    expect(first.next_before).toBe(first.tuples.at(-1)!.id);
    const everywhere = await api("/v1/langgraph/list", { key: t.adminKey, body: {} });
    expect(everywhere.status).toBe(200);
    expect(((await everywhere.json()) as { next_before?: string }).next_before).toBeDefined();
    // The saver follows the pages: every checkpoint, newest first, across threads too.
    const saver = saverFor(t.adminKey);
    const listed = [];
    for await (const c of saver.list({ configurable: { thread_id: "huge" } })) listed.push(c.config.configurable?.checkpoint_id);
    expect(listed).toEqual([5, 4, 3, 2, 1].map(id));
    const across = [];
    for await (const c of saver.list({ configurable: {} })) across.push(c.config.configurable?.checkpoint_id);
    expect(across).toEqual([5, 4, 3, 2, 1].map(id));

    // 40 MiB held; two more 8 MiB checkpoints make 56 MiB and some, the next one passes 64 MiB.
    for (let i = 6; i <= 7; i++) expect((await batch(t.adminKey, "huge", [put(id(i), id(i - 1), blob(i))])).status).toBe(200);
    const over = await batch(t.adminKey, "huge", [put(id(8), id(7), blob(8))]);
    expect(over.status).toBe(413);
    expect(await codeOf(over)).toBe("BEM-019");
    const head = (await (await api("/v1/langgraph/threads/huge/list", { key: t.adminKey, body: { limit: 1 } })).json()) as { tuples: { id: string }[] };
    expect(head.tuples.map((x) => x.id)).toEqual([id(7)]);

    // The way out: prune, and the thread takes writes again.
    expect((await api("/v1/langgraph/threads/huge/prune", { key: t.adminKey, body: { keep_last: 1 } })).status).toBe(200);
    expect((await batch(t.adminKey, "huge", [put(id(8), id(7), blob(8))])).status).toBe(200);
  }, 300_000);

  it("a delta-channel walk past what one response carries: 413 BEM-145, and a get leaves the walk out instead of failing", async () => {
    const t = await createTenant();
    // Five steps whose writes to `log` hold 7 MiB each, no snapshot among them: 35 MiB to walk.
    for (let i = 1; i <= 6; i++) {
      const ops: unknown[] = [put(id(i), i === 1 ? null : id(i - 1), bytes(16, i))];
      if (i <= 5) ops.push({ ...writes(id(i), bytes(7 * MiB, i)), writes: [{ channel: "log", idx: 0, value: { t: "bytes", b: bytes(7 * MiB, i) } }] });
      expect((await batch(t.adminKey, "deep", ops)).status).toBe(200);
    }
    const walk = await api("/v1/langgraph/threads/deep/delta-history", { key: t.adminKey, body: { checkpoint_id: id(6), channels: ["log"] } });
    expect(walk.status).toBe(413);
    expect(await codeOf(walk)).toBe("BEM-145");
    const got = await api("/v1/langgraph/threads/deep/get", { key: t.adminKey, body: { checkpoint_id: id(6), delta_channels: ["log"] } });
    expect(got.status).toBe(200);
    const body = (await got.json()) as { tuple: { id: string }; history?: unknown };
    expect(body.tuple.id).toBe(id(6));
    expect(body.history).toBeUndefined();
  }, 300_000);
});
