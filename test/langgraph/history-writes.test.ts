import { Annotation, Command, END, interrupt, MemorySaver, Send, START, StateGraph } from "@langchain/langgraph";
import type { BaseCheckpointSaver, PendingWrite } from "@langchain/langgraph-checkpoint";
import type { RunnableConfig } from "@langchain/core/runnables";
import { describe, expect, it } from "vitest";
import { EdgeweaveSaver } from "../../src/langgraph-client/saver";
import { uuid6Prefix } from "../../src/core/checkpoint-clock";
import { checkpointPut } from "../support/checkpoint-put";
import { api, createKey, createTenant } from "../support/tenants";
import { BASE_URL, freshMember, saverFor, workerFetch } from "./support";

/**
 * New pending writes on a checkpoint that another key's checkpoint has continued need
 * `rewrite_thread`: a later resume or fork from it would apply them (a Command update, a resume
 * value, a task's output). A run writes to the checkpoint its step runs on.
 */
const b64 = (o: unknown) => btoa(JSON.stringify(o));
const put = (id: string, parent: string | null) => ({ ...checkpointPut(), id, parent_id: parent });
/** Writes of one task, regular (idx 0, 1, …) unless an idx is given (negative: special). */
const writes = (checkpointId: string, task: string, values: string[], idx?: number) => ({
  op: "writes",
  ns: "",
  checkpoint_id: checkpointId,
  task_id: task,
  task_path: "",
  writes: values.map((v, i) => ({ channel: "note", idx: idx ?? i, value: { t: "json", b: b64(v) } })),
});
const batch = (key: string, thread: string, ops: unknown[]) => api(`/v1/langgraph/threads/${thread}/batch`, { key, body: { ops } });
const tuple = async (key: string, thread: string, id: string) =>
  (
    (await (await api(`/v1/langgraph/threads/${thread}/get`, { key, body: { checkpoint_id: id } })).json()) as {
      tuple: { writes: { task_id: string; value: { b: string } }[] } | null;
    }
  ).tuple;
const writesOn = async (key: string, thread: string, id: string) =>
  (await tuple(key, thread, id))!.writes.map((w) => `${w.task_id}:${JSON.parse(atob(w.value.b))}`);
const refused = async (res: Response) => {
  expect(res.status).toBe(403);
  return ((await res.json()) as { error: { code: string; message: string } }).error;
};

async function setUp() {
  const t = await createTenant();
  const member = (await createKey(t.tenant, { role: "member", scopes: ["session:*"] })).key;
  const thread = `hw-${crypto.randomUUID().slice(0, 8)}`;
  // The admin's run: checkpoint 1 with its task's write, continued by checkpoint 2.
  expect((await batch(t.adminKey, thread, [put("1ef-0001", null), writes("1ef-0001", "task-a", ["admin a"])])).status).toBe(200);
  expect((await batch(t.adminKey, thread, [put("1ef-0002", "1ef-0001")])).status).toBe(200);
  return { t, member, thread };
}

describe("new pending writes on a continued checkpoint need rewrite_thread", () => {
  it("a member's new task or new index on the admin's continued checkpoint is 403 BEM-022; the batch stores nothing; the admin may", async () => {
    const { t, member, thread } = await setUp();
    for (const op of [
      writes("1ef-0001", "planted", ["member"]),
      writes("1ef-0001", "task-a", ["member b"], 1),
      writes("1ef-0001", "planted", ["resume"], -4),
    ]) {
      const error = await refused(await batch(member, thread, [op]));
      expect(error.code).toBe("BEM-022");
      expect(error.message).toContain("checkpoint '1ef-0001' has been continued by another key's checkpoint ('1ef-0002')");
    }
    // Whole batch refused: its put after the newest and its write there are not stored either.
    await refused(await batch(member, thread, [put("1ef-0003", "1ef-0002"), writes("1ef-0003", "t3", ["m"]), writes("1ef-0001", "planted", ["member"])]));
    expect(await tuple(t.adminKey, thread, "1ef-0003")).toBeNull();
    expect(await writesOn(t.adminKey, thread, "1ef-0001")).toEqual(["task-a:admin a"]);
    // A write that is already stored (same task and index: a retry) is first-wins and changes nothing: accepted.
    expect((await batch(member, thread, [writes("1ef-0001", "task-a", ["member again"])])).status).toBe(200);
    // The newest checkpoint is a step in progress: a run, for a member too.
    expect((await batch(member, thread, [writes("1ef-0002", "task-b", ["member b"])])).status).toBe(200);
    // An admin adds writes anywhere (rewrite_thread: a repair, an import).
    expect((await batch(t.adminKey, thread, [writes("1ef-0001", "repair", ["admin fix"])])).status).toBe(200);
    expect(await writesOn(member, thread, "1ef-0001")).toEqual(["repair:admin fix", "task-a:admin a"]);
    expect(await writesOn(member, thread, "1ef-0002")).toEqual(["task-b:member b"]);
  });

  it("a checkpoint continued only by the writer's own checkpoints still takes its late writes; a fork or a later step by another key closes it", async () => {
    const { t, member, thread } = await setUp();
    // The member continues the admin's newest, and its step's writes arrive after its next checkpoints.
    expect((await batch(member, thread, [put("1ef-0003", "1ef-0002"), put("1ef-0004", "1ef-0003")])).status).toBe(200);
    expect((await batch(member, thread, [writes("1ef-0002", "late", ["m2"]), writes("1ef-0003", "late", ["m3"])])).status).toBe(200);
    // Another key's checkpoint below it (the admin continues the member's), or a fork beside it, closes it.
    expect((await batch(t.adminKey, thread, [put("1ef-0005", "1ef-0004")])).status).toBe(200);
    for (const id of ["1ef-0002", "1ef-0003", "1ef-0004"])
      expect((await refused(await batch(member, thread, [writes(id, "later", ["m"])]))).code).toBe("BEM-022");
    // A member's own fork from the admin's older checkpoint (it becomes the newest) does not open that checkpoint.
    expect((await batch(member, thread, [put("1ef-0006", "1ef-0001")])).status).toBe(200);
    expect((await refused(await batch(member, thread, [writes("1ef-0001", "via-fork", ["m"])]))).code).toBe("BEM-022");
    expect((await batch(member, thread, [writes("1ef-0006", "on-fork", ["m"])])).status).toBe(200);
  });
});

/** A UUID v6 as LangGraph writes it, at `ms`. */
const uuid6At = (ms: number, node = "000000000000") => `${uuid6Prefix(ms)}-8000-${node}`;
const interruptOn = (checkpointId: string, task: string, value: string) => writes(checkpointId, task, [value], -3);

describe("replacing a special pending write on a continued checkpoint needs rewrite_thread", () => {
  it("a member's own interrupt write, once the admin's checkpoint continued it, is 403 BEM-022 and the batch stores nothing", async () => {
    const { t, member, thread } = await setUp();
    // The member's step on the admin's newest interrupts; the admin then continues that checkpoint.
    expect((await batch(member, thread, [interruptOn("1ef-0002", "review", "member asks")])).status).toBe(200);
    // Replacing it while nothing has continued the checkpoint is LangGraph's own use (a task interrupted again).
    expect((await batch(member, thread, [interruptOn("1ef-0002", "review", "member asks again")])).status).toBe(200);
    expect((await batch(t.adminKey, thread, [put("1ef-0003", "1ef-0002")])).status).toBe(200);
    const error = await refused(await batch(member, thread, [put("1ef-0004", "1ef-0003"), interruptOn("1ef-0002", "review", "rewritten")]));
    expect(error.code).toBe("BEM-022");
    expect(error.message).toContain("continued by another key's checkpoint ('1ef-0003')");
    expect(await tuple(t.adminKey, thread, "1ef-0004")).toBeNull();
    expect(await writesOn(t.adminKey, thread, "1ef-0002")).toEqual(["review:member asks again"]);
    // The admin may (rewrite_thread).
    expect((await batch(t.adminKey, thread, [interruptOn("1ef-0002", "review", "admin fix")])).status).toBe(200);
  });

  it("a checkpoint continued by a child a little behind on the clock (it stays the newest by id): another key's special write on it is 403 BEM-022", async () => {
    const { t, member } = await setUp();
    const thread = `hw-skew-${crypto.randomUUID().slice(0, 8)}`;
    const now = Date.now();
    const [a1, a2] = [uuid6At(now - 60_000), uuid6At(now)];
    expect((await batch(t.adminKey, thread, [put(a1, null), put(a2, a1), interruptOn(a2, "review", "admin asks")])).status).toBe(200);
    // The admin's next step ran on a machine 1 s behind: its child sorts below a2, which stays the newest by id.
    const child = uuid6At(now - 1000, "000000000001");
    expect((await batch(t.adminKey, thread, [put(child, a2)])).status).toBe(200);
    const newest = (await (await api(`/v1/langgraph/threads/${thread}/get`, { key: member, body: {} })).json()) as { tuple: { id: string } };
    expect(newest.tuple.id).toBe(a2);
    const error = await refused(await batch(member, thread, [interruptOn(a2, "review", "planted")]));
    expect(error.code).toBe("BEM-022");
    expect(error.message).toContain(`has been continued by a checkpoint ('${child}')`);
    expect(await writesOn(t.adminKey, thread, a2)).toEqual(["review:admin asks"]);
  });

  it("the writer's own special write on a checkpoint only its own checkpoints continued still takes a late copy; another key's does not", async () => {
    const { t, member, thread } = await setUp();
    expect((await batch(member, thread, [interruptOn("1ef-0002", "review", "m"), put("1ef-0003", "1ef-0002")])).status).toBe(200);
    expect((await batch(member, thread, [interruptOn("1ef-0002", "review", "m late")])).status).toBe(200);
    expect((await batch(t.adminKey, thread, [put("1ef-0004", "1ef-0003"), interruptOn("1ef-0004", "review", "a")])).status).toBe(200);
    expect((await batch(member, thread, [put("1ef-0005", "1ef-0004")])).status).toBe(200);
    expect((await refused(await batch(member, thread, [interruptOn("1ef-0004", "review", "m over a")]))).code).toBe("BEM-022");
    expect(await writesOn(t.adminKey, thread, "1ef-0004")).toEqual(["review:a"]);
  });
});

const State = Annotation.Root({
  topics: Annotation<string[]>(),
  found: Annotation<string[]>({ reducer: (a, b) => a.concat(b).sort(), default: () => [] }),
  verdict: Annotation<string>(),
});

/** plan → Send fan-out to `search` (one task per topic) → review (interrupts for a human) → END. */
function buildGraph(checkpointer: BaseCheckpointSaver) {
  return new StateGraph(State)
    .addNode("plan", (s: typeof State.State) => ({ topics: s.topics }))
    .addNode("search", (s: { topic: string }) => ({ found: [`found ${s.topic}`] }))
    .addNode("review", () => ({ verdict: interrupt({ question: "ok?" }) as string }))
    .addEdge(START, "plan")
    .addConditionalEdges("plan", (s: typeof State.State) => s.topics.map((topic) => new Send("search", { topic })), ["search"])
    .addEdge("search", "review")
    .addEdge("review", END)
    .compile({ checkpointer });
}

type Durability = "sync" | "async" | "exit";
async function run(checkpointer: BaseCheckpointSaver, durability: Durability, thread = `run-${durability}`) {
  const graph = buildGraph(checkpointer);
  const config = { configurable: { thread_id: thread }, durability };
  const first = await graph.invoke({ topics: ["a", "b", "c"] }, config);
  const done = await graph.invoke(new Command({ resume: "yes" }), config);
  const history = [];
  for await (const s of graph.getStateHistory({ configurable: { thread_id: thread } })) history.push([s.metadata?.source, s.next]);
  return { interrupted: (first as { __interrupt__?: { value: unknown }[] }).__interrupt__?.[0]?.value, done, history };
}

/** A saver whose task writes reach the server late, after the next checkpoint (as an asynchronous serde can send them). */
class LateWritesSaver extends EdgeweaveSaver {
  override async putWrites(config: RunnableConfig, w: PendingWrite[], taskId: string, taskPath?: string): Promise<void> {
    await new Promise((r) => setTimeout(r, 30));
    return super.putWrites(config, w, taskId, taskPath);
  }
}

describe("an honest graph on a member key: its writes go to checkpoints nothing else has continued", () => {
  for (const durability of ["sync", "async", "exit"] as const) {
    it(`Send fan-out, interrupt and resume, durability ${durability}: as on MemorySaver`, async () => {
      const { key } = await freshMember();
      const reference = await run(new MemorySaver(), durability);
      expect(reference.done).toMatchObject({ found: ["found a", "found b", "found c"], verdict: "yes" });
      expect(await run(saverFor(key), durability)).toEqual(reference);
      const late = new LateWritesSaver({ baseUrl: BASE_URL, apiKey: key, fetch: workerFetch() });
      expect(await run(late, durability, `late-${durability}`)).toEqual(reference);
    });
  }
});

describe("a past interrupt, resumed again by a member", () => {
  it("in place (Command resume with the continued checkpoint's id) is 403 BEM-022; a fork of it resumes", async () => {
    const { key, tenant } = await freshMember();
    const admin = buildGraph(saverFor(tenant.adminKey));
    const config = { configurable: { thread_id: "past" } };
    await admin.invoke({ topics: ["a"] }, config);
    await admin.invoke(new Command({ resume: "yes" }), config);
    const member = buildGraph(saverFor(key));
    let paused: RunnableConfig | undefined;
    for await (const s of member.getStateHistory(config)) if (s.next.includes("review") && !paused) paused = s.config;
    await expect(member.invoke(new Command({ resume: "no" }), paused)).rejects.toMatchObject({ status: 403, code: "BEM-022" });
    const fork = await member.updateState(paused!, null);
    expect(await member.invoke(new Command({ resume: "no" }), fork)).toMatchObject({ found: ["found a"], verdict: "no" });
    expect((await admin.getState(config)).values.verdict).toBe("no");
  });
});
