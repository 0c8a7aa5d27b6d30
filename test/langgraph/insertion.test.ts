import { emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";
import { uuid6Prefix } from "../../src/core/checkpoint-clock";
import { checkpointPut } from "../support/checkpoint-put";
import { api, createKey, createTenant } from "../support/tenants";
import { saverFor } from "./support";

/**
 * A key without `rewrite_thread` writes new checkpoints after its namespace's newest (a run), never
 * below it: there a new checkpoint sits inside another key's history, and a later resume or fork by
 * its id would run on the planted state. Clock skew between an app's machines is the one allowance.
 */
/** A put op of `id` (opaque bytes to the server) continuing `parent`, its metadata noting who wrote it. */
const put = (id: string, parent: string | null, note: string) => ({
  ...checkpointPut(),
  id,
  parent_id: parent,
  metadata: { t: "json", b: btoa(JSON.stringify({ note })) },
});
const batch = (key: string, thread: string, ops: unknown[]) => api(`/v1/langgraph/threads/${thread}/batch`, { key, body: { ops } });
const ids = async (key: string, thread: string) =>
  ((await (await api(`/v1/langgraph/threads/${thread}/list`, { key, body: {} })).json()) as { tuples: { id: string }[] }).tuples.map((t) => t.id);
const noteOf = async (key: string, thread: string, id: string) => {
  const res = (await (await api(`/v1/langgraph/threads/${thread}/get`, { key, body: { checkpoint_id: id } })).json()) as { tuple: { metadata: { b: string } } };
  return JSON.parse(atob(res.tuple.metadata.b)).note as string;
};
const refused = async (res: Response) => {
  expect(res.status).toBe(403);
  return ((await res.json()) as { error: { code: string; message: string } }).error;
};
/** A UUID v6 as LangGraph writes it, at `ms`. */
const uuid6At = (ms: number, node = "000000000000") => `${uuid6Prefix(ms)}-8000-${node}`;

async function setUp() {
  const t = await createTenant();
  const member = (await createKey(t.tenant, { role: "member", scopes: ["session:*"] })).key;
  return { t, member, thread: `ins-${crypto.randomUUID().slice(0, 8)}` };
}

describe("a new LangGraph checkpoint below its namespace's newest needs rewrite_thread", () => {
  it("a member cannot plant a checkpoint into the admin's history (between two, or before the first); the whole batch stores nothing; the admin may", async () => {
    const { t, member, thread } = await setUp();
    expect((await batch(t.adminKey, thread, [put("1ef-0001", null, "admin")])).status).toBe(200);
    expect((await batch(t.adminKey, thread, [put("1ef-0003", "1ef-0001", "admin 2")])).status).toBe(200);
    for (const [id, parent] of [
      ["1ef-0002", "1ef-0001"],
      ["1ef-0002", "1ef-0003"],
      ["0000", null],
    ] as const) {
      const error = await refused(await batch(member, thread, [put(id, parent, "planted")]));
      expect(error.code).toBe("BEM-022");
      expect(error.message).toContain(`new checkpoint '${id}' sorts below its namespace's newest '1ef-0003'`);
    }
    // The batch is refused whole: its put after the newest, before the planted one, is not stored either.
    await refused(await batch(member, thread, [put("1ef-0004", "1ef-0003", "member"), put("1ef-0002", "1ef-0001", "planted")]));
    expect(await ids(t.adminKey, thread)).toEqual(["1ef-0003", "1ef-0001"]);
    // After the newest is a run; an admin (rewrite_thread: an import, a repair) writes anywhere.
    expect((await batch(member, thread, [put("1ef-0004", "1ef-0003", "member")])).status).toBe(200);
    expect((await batch(t.adminKey, thread, [put("1ef-0002", "1ef-0001", "admin"), put("0000", null, "admin")])).status).toBe(200);
    expect(await ids(member, thread)).toEqual(["1ef-0004", "1ef-0003", "1ef-0002", "1ef-0001", "0000"]);
  });

  it("clock skew: a member's UUID v6 a little below the newest goes in when it continues what nothing has continued yet", async () => {
    const { t, member, thread } = await setUp();
    const now = Date.now();
    const [a1, a2] = [uuid6At(now - 60_000), uuid6At(now)];
    expect((await batch(t.adminKey, thread, [put(a1, null, "admin"), put(a2, a1, "admin 2")])).status).toBe(200);
    // A machine whose clock runs 2 s behind continues the newest, then its own step (both still below a2).
    const [m1, m2] = [uuid6At(now - 2000), uuid6At(now - 1000)];
    expect((await batch(member, thread, [put(m1, a2, "behind")])).status).toBe(200);
    expect((await batch(member, thread, [put(m2, m1, "behind 2")])).status).toBe(200);
    // Refused: between a checkpoint and the one that continued it, a new root, more than 5 minutes below the newest.
    for (const [id, parent] of [
      [uuid6At(now - 500, "000000000001"), a1],
      [uuid6At(now - 500, "000000000002"), null],
      [uuid6At(now - 6 * 60_000), m2],
      [uuid6At(now - 1000, "000000000003"), m1],
    ] as const) {
      expect((await refused(await batch(member, thread, [put(id, parent, "planted")]))).code).toBe("BEM-022");
    }
    expect(await ids(t.adminKey, thread)).toEqual([a2, m2, m1, a1]);
  });

  it("EdgeweaveSaver: a member continues the admin's checkpoint; a put whose id the client set below the newest is 403 BEM-022", async () => {
    const { t, member, thread } = await setUp();
    const admin = saverFor(t.adminKey);
    const mine = saverFor(member);
    const meta = { source: "loop" as const, step: 0, parents: {} };
    const first = await admin.put({ configurable: { thread_id: thread, checkpoint_ns: "" } }, { ...emptyCheckpoint(), id: uuid6(0) }, meta, {});
    const second = await mine.put(first, { ...emptyCheckpoint(), id: uuid6(1) }, { ...meta, step: 1 }, {});
    const third = await admin.put(second, { ...emptyCheckpoint(), id: uuid6(2) }, { ...meta, step: 2 }, {});
    const planted = { ...emptyCheckpoint(), id: "1ef00000-0000-6000-8000-000000000000" };
    await expect(mine.put(first, planted, { ...meta, step: 1 }, {})).rejects.toMatchObject({ name: "EdgeweaveError", status: 403, code: "BEM-022" });
    const listed = [];
    for await (const c of mine.list({ configurable: { thread_id: thread } })) listed.push(c.config.configurable?.checkpoint_id);
    expect(listed).toEqual([third, second, first].map((c) => c.configurable?.checkpoint_id));
  });

  it("a member cannot replace its own checkpoint once another key's skewed child continued it (still the newest by id); an identical retry goes in", async () => {
    // Before, its own checkpoint was replaceable while the newest by id, and a child written on a clock behind sorts below it.
    const { t, member, thread } = await setUp();
    const other = (await createKey(t.tenant, { role: "member", scopes: ["session:*"] })).key;
    const now = Date.now();
    const [a, x, y] = [uuid6At(now - 60_000), uuid6At(now), uuid6At(now - 1000)];
    expect((await batch(t.adminKey, thread, [put(a, null, "admin")])).status).toBe(200);
    expect((await batch(member, thread, [put(x, a, "member")])).status).toBe(200);
    // Another key's machine, 1 s behind, continues X (the skew allowance): X stays the newest by id.
    expect((await batch(other, thread, [put(y, x, "other")])).status).toBe(200);
    expect(await ids(member, thread)).toEqual([x, y, a]);
    const error = await refused(await batch(member, thread, [put(x, a, "member rewrites"), put(uuid6At(now + 1000), x, "member 2")]));
    expect(error.code).toBe("BEM-022");
    expect(error.message).toContain(`checkpoint '${x}' has been continued by another key's checkpoint ('${y}')`);
    // Nothing of the batch is stored, and X is as the member first wrote it.
    expect(await ids(member, thread)).toEqual([x, y, a]);
    expect(await noteOf(member, thread, x)).toBe("member");
    // The same put again (a retry whose first answer was lost) is accepted; the admin may replace it (rewrite_thread).
    expect((await batch(member, thread, [put(x, a, "member")])).status).toBe(200);
    expect((await batch(t.adminKey, thread, [put(x, a, "admin fixes")])).status).toBe(200);
    expect(await noteOf(member, thread, x)).toBe("admin fixes");
  });

  it("a member still replaces its own newest checkpoint that only its own checkpoints continued (a step in progress)", async () => {
    const { t, member, thread } = await setUp();
    const now = Date.now();
    const [a, x, y] = [uuid6At(now - 60_000), uuid6At(now), uuid6At(now - 1000)];
    expect((await batch(t.adminKey, thread, [put(a, null, "admin")])).status).toBe(200);
    expect((await batch(member, thread, [put(x, a, "member"), put(y, x, "member, behind")])).status).toBe(200);
    expect((await batch(member, thread, [put(x, a, "member again")])).status).toBe(200);
    expect(await noteOf(t.adminKey, thread, x)).toBe("member again");
  });
});

describe("the clock-skew allowance places no checkpoint inside others' history", () => {
  it("a skewed id never lands between a checkpoint and the one that continued it, nor below a checkpoint it does not continue", async () => {
    // Before, only its parent was checked: an id 2 minutes below the newest, continuing the newest, sorted between
    // the admin's P and P's child S, and a list (getStateHistory) showed it as the step between them.
    const { t, member, thread } = await setUp();
    const now = Date.now();
    const [root, p, s, head] = [uuid6At(now - 10 * 60_000), uuid6At(now - 4 * 60_000), uuid6At(now - 60_000), uuid6At(now)];
    expect((await batch(t.adminKey, thread, [put(root, null, "admin"), put(p, root, "p"), put(s, p, "s"), put(head, root, "fork")])).status).toBe(200);
    for (const id of [uuid6At(now - 2 * 60_000), uuid6At(now - 4.5 * 60_000)]) {
      const error = await refused(await batch(member, thread, [put(id, head, "planted")]));
      expect(error.code).toBe("BEM-022");
    }
    expect(await ids(t.adminKey, thread)).toEqual([head, s, p, root]);
    // Below only what it continues (the newest and its own ancestors) is the honest lagging machine: it goes in.
    const lag = uuid6At(now - 1000);
    expect((await batch(member, thread, [put(lag, head, "behind")])).status).toBe(200);
    expect(await ids(t.adminKey, thread)).toEqual([head, lag, s, p, root]);
  });

  it("a skewed id must be of the server's present: no member id is planted into history written long ago", async () => {
    // Before, the window was measured from the namespace's newest only, so an old thread took ids between old checkpoints.
    const { t, member, thread } = await setUp();
    const then = Date.now() - 24 * 3600_000;
    const [a1, a2, a3] = [uuid6At(then - 4 * 60_000), uuid6At(then - 60_000), uuid6At(then)];
    expect((await batch(t.adminKey, thread, [put(a1, null, "admin"), put(a2, a1, "admin 2"), put(a3, a2, "admin 3")])).status).toBe(200);
    const planted = uuid6At(then - 2 * 60_000);
    const error = await refused(await batch(member, thread, [put(planted, a3, "planted")]));
    expect(error.code).toBe("BEM-022");
    expect(await ids(t.adminKey, thread)).toEqual([a3, a2, a1]);
    // Today's machine continues the old newest with today's id: a run, as always.
    expect((await batch(member, thread, [put(uuid6At(Date.now()), a3, "today")])).status).toBe(200);
  });
});
