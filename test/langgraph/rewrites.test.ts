import { uuid6 } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";
import { api, createKey, createTenant, type TestTenant } from "../support/tenants";

/**
 * Issue #25.2: a member key with thread reach writes new checkpoints (a run) but rewrites no
 * history: replacing a checkpoint another key wrote (same id), overwriting another key's special
 * pending write on an older checkpoint, and deleting or pruning checkpoints need `rewrite_thread`.
 */
const b64 = (o: unknown) => btoa(JSON.stringify(o));
/** A checkpoint whose `note` channel holds `note`, at a version of its own (a new value is a new version, as LangGraph writes them). */
const put = (id: string, parent: string | null, note: string, version = `1.${note.replace(/\W/g, "_")}`) => ({
  op: "put",
  ns: "",
  id,
  parent_id: parent,
  v: 4,
  versions: { note: version },
  checkpoint: { t: "json", b: b64({ v: 4, id, ts: "", channel_values: {}, channel_versions: { note: version }, versions_seen: {} }) },
  metadata: { t: "json", b: b64({ note }) },
  blobs: [{ channel: "note", version, value: { t: "json", b: b64(note) } }],
});
/** The `note` value a checkpoint reads. */
const noteValue = async (key: string, thread: string, id: string) => {
  const res = (await (await api(`/v1/langgraph/threads/${thread}/get`, { key, body: { checkpoint_id: id } })).json()) as {
    tuple: { blobs: { channel: string; value: { b: string } | null }[] };
  };
  return JSON.parse(atob(res.tuple.blobs.find((b) => b.channel === "note")!.value!.b)) as string;
};
/** A special write: INTERRUPT is WRITES_IDX_MAP's -3 (those replace; regular writes are first-wins). */
const interrupt = (checkpointId: string, value: string) => ({
  op: "writes",
  ns: "",
  checkpoint_id: checkpointId,
  task_id: "task-1",
  task_path: "",
  writes: [{ channel: "__interrupt__", idx: -3, value: { t: "json", b: b64(value) } }],
});
const batch = (key: string, thread: string, ops: unknown[]) => api(`/v1/langgraph/threads/${thread}/batch`, { key, body: { ops } });
const tuple = async (key: string, thread: string, checkpointId: string) =>
  (
    (await (await api(`/v1/langgraph/threads/${thread}/get`, { key, body: { checkpoint_id: checkpointId } })).json()) as {
      tuple: { metadata: { b: string }; writes: { value: { b: string } }[] };
    }
  ).tuple;
const noteOf = async (key: string, thread: string, id: string) => JSON.parse(atob((await tuple(key, thread, id)).metadata.b)).note as string;
const interruptOf = async (key: string, thread: string, id: string) => JSON.parse(atob((await tuple(key, thread, id)).writes[0]!.value.b)) as string;

async function setUp(): Promise<{ t: TestTenant; member: string; thread: string }> {
  const t = await createTenant();
  const member = (await createKey(t.tenant, { role: "member", scopes: ["session:*"] })).key;
  const thread = `rw-${crypto.randomUUID().slice(0, 8)}`;
  // The admin's run: checkpoint 1 (interrupted), then checkpoint 2.
  expect((await batch(t.adminKey, thread, [put("1ef-0001", null, "admin"), interrupt("1ef-0001", "admin asks")])).status).toBe(200);
  expect((await batch(t.adminKey, thread, [put("1ef-0002", "1ef-0001", "admin 2")])).status).toBe(200);
  return { t, member, thread };
}

describe("LangGraph checkpoint rewrites need rewrite_thread", () => {
  it("a member cannot replace a checkpoint the admin wrote (same id); the admin's stays", async () => {
    const { t, member, thread } = await setUp();
    const res = await batch(member, thread, [put("1ef-0001", null, "member")]);
    expect(res.status).toBe(403);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("BEM-022");
    expect(await noteOf(t.adminKey, thread, "1ef-0001")).toBe("admin");
    // A refused batch stores nothing of it, not even the ops before the refused one.
    expect((await batch(member, thread, [put("1ef-0003", "1ef-0002", "member new"), put("1ef-0001", null, "member")])).status).toBe(403);
    expect(await tuple(t.adminKey, thread, "1ef-0003")).toBeNull();
    // The admin may (rewrite_thread).
    expect((await batch(t.adminKey, thread, [put("1ef-0001", null, "admin again")])).status).toBe(200);
    expect(await noteOf(t.adminKey, thread, "1ef-0001")).toBe("admin again");
  });

  it("a member cannot plant the value of a version another key's checkpoint will name: that put is refused, the planted value read by nobody", async () => {
    const { t, member, thread } = await setUp();
    // The member guesses the admin's next version of `note` and writes it first, on a checkpoint of its own.
    expect((await batch(member, thread, [put("1ef-0003", "1ef-0002", "planted", "2.next")])).status).toBe(200);
    // The admin's own run then names that version with its own value: it may rewrite history, so its value wins.
    expect((await batch(t.adminKey, thread, [put("1ef-0004", "1ef-0003", "admin's own", "2.next")])).status).toBe(200);
    expect(await noteValue(t.adminKey, thread, "1ef-0004")).toBe("admin's own");
    // Between two members it is refused: a second member's checkpoint naming the version never reads the first's value.
    const other = (await createKey(t.tenant, { role: "member", scopes: ["session:*"] })).key;
    expect((await batch(member, thread, [put("1ef-0005", "1ef-0004", "planted again", "3.next")])).status).toBe(200);
    const refused = await batch(other, thread, [put("1ef-0006", "1ef-0005", "other's own", "3.next")]);
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { error: { code: string; message: string } }).error.message).toMatch(/another key's value with other content/);
    expect(await tuple(t.adminKey, thread, "1ef-0006")).toBeNull();
    // The same value written again by another key (a graph's unchanged channel, a shared start) goes in as before.
    expect((await batch(other, thread, [put("1ef-0006", "1ef-0005", "planted again", "3.next")])).status).toBe(200);
    expect(await noteValue(other, thread, "1ef-0006")).toBe("planted again");
  });

  it("a member writes new checkpoints (a run) and may retry its own put of the same id", async () => {
    const { t, member, thread } = await setUp();
    expect((await batch(member, thread, [put("1ef-0003", "1ef-0002", "member")])).status).toBe(200);
    expect((await batch(member, thread, [put("1ef-0003", "1ef-0002", "member, retried")])).status).toBe(200);
    expect(await noteOf(t.adminKey, thread, "1ef-0003")).toBe("member, retried");
  });

  it("a member cannot replace its own checkpoint once it is history (not its namespace's newest); an identical retry still goes in", async () => {
    // Its own put of an existing id went in whatever came after: a member rewrote a checkpoint another key's run had built on.
    const { t, member, thread } = await setUp();
    const own = [put("1ef-0003", "1ef-0002", "member"), put("1ef-0004", "1ef-0003", "member 2")];
    expect((await batch(member, thread, own)).status).toBe(200);
    expect((await batch(t.adminKey, thread, [put("1ef-0005", "1ef-0004", "admin 3")])).status).toBe(200);
    for (const id of ["1ef-0003", "1ef-0004"]) {
      const res = await batch(member, thread, [put(id, id === "1ef-0003" ? "1ef-0002" : "1ef-0003", "member rewrites")]);
      expect(res.status).toBe(403);
      expect(((await res.json()) as { error: { code: string; message: string } }).error).toMatchObject({ code: "BEM-022" });
    }
    expect([await noteOf(t.adminKey, thread, "1ef-0003"), await noteOf(t.adminKey, thread, "1ef-0004")]).toEqual(["member", "member 2"]);
    // The same batch sent again (a retry whose first answer was lost) changes nothing and is accepted.
    expect((await batch(member, thread, own)).status).toBe(200);
    // The admin may replace it (rewrite_thread).
    expect((await batch(t.adminKey, thread, [put("1ef-0003", "1ef-0002", "admin fixes")])).status).toBe(200);
    expect(await noteOf(t.adminKey, thread, "1ef-0003")).toBe("admin fixes");
  });

  it("a member cannot overwrite the admin's special write on an older checkpoint; on the newest one it follows LangGraph (replace)", async () => {
    const { t, member, thread } = await setUp();
    const res = await batch(member, thread, [interrupt("1ef-0001", "member says")]);
    expect(res.status).toBe(403);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("BEM-022");
    expect(await interruptOf(t.adminKey, thread, "1ef-0001")).toBe("admin asks");
    // The newest checkpoint's pending step is a run in progress: a task interrupted again replaces its interrupt.
    expect((await batch(t.adminKey, thread, [interrupt("1ef-0002", "admin asks 2")])).status).toBe(200);
    expect((await batch(member, thread, [interrupt("1ef-0002", "member asks")])).status).toBe(200);
    expect(await interruptOf(t.adminKey, thread, "1ef-0002")).toBe("member asks");
  });

  it("a member cannot delete or prune the thread's checkpoints; the admin can", async () => {
    const { t, member, thread } = await setUp();
    const del = await api(`/v1/langgraph/threads/${thread}`, { method: "DELETE", key: member });
    expect(del.status).toBe(403);
    expect(((await del.json()) as { error: { code: string } }).error.code).toBe("BEM-022");
    const prune = await api(`/v1/langgraph/threads/${thread}/prune`, { key: member, body: { keep_last: 1 } });
    expect(prune.status).toBe(403);
    expect(await noteOf(t.adminKey, thread, "1ef-0001")).toBe("admin");
    expect((await api(`/v1/langgraph/threads/${thread}`, { method: "DELETE", key: t.adminKey })).status).toBe(204);
    expect(await tuple(t.adminKey, thread, "1ef-0002")).toBeNull();
  });

  it("a member cannot write a checkpoint id ahead of the clock, which would stay the thread's newest and hide every later one", async () => {
    const { t, member, thread } = await setUp();
    // LangGraph's ids are UUID v6 of the moment they are written, and "latest" is the highest id:
    // an id from the future (or any id above every UUID, like "zzzz") would be every later read's
    // head, so each run by any key would resume from the member's checkpoint.
    const hourAhead = (() => {
      const ticks = BigInt(Date.now() + 3_600_000) * 10000n + 0x01b21dd213814000n;
      const hex = (v: bigint, n: number) => v.toString(16).padStart(n, "0");
      return `${hex(ticks >> 28n, 8)}-${hex((ticks >> 12n) & 0xffffn, 4)}-6${hex(ticks & 0xfffn, 3)}-8000-000000000000`;
    })();
    for (const id of ["zzzz", hourAhead]) {
      const res = await batch(member, thread, [put(id, "1ef-0002", "member pins the head")]);
      expect(res.status).toBe(403);
      expect(((await res.json()) as { error: { code: string; message: string } }).error).toMatchObject({ code: "BEM-022" });
      expect(await tuple(t.adminKey, thread, id)).toBeNull();
    }
    // An id LangGraph writes now is a run, for a member as for anyone; the admin's next one is the head.
    const now = uuid6(-1);
    expect((await batch(member, thread, [put(now, "1ef-0002", "member now")])).status).toBe(200);
    const next = uuid6(-1);
    expect((await batch(t.adminKey, thread, [put(next, now, "admin next")])).status).toBe(200);
    const head = (await (await api(`/v1/langgraph/threads/${thread}/get`, { key: member, body: {} })).json()) as { tuple: { id: string } };
    expect(head.tuple.id).toBe(next);
    // The admin may write any id (rewrite_thread: an import, a repair).
    expect((await batch(t.adminKey, thread, [put("zzzz", next, "admin")])).status).toBe(200);
  });
});
