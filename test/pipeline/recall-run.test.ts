import { describe, expect, it } from "vitest";
import { fakeOllama } from "../support/fake-ollama";
import { fakeOpenAI } from "../support/fake-openai";
import { api } from "../support/tenants";
import { tenantForRuns, uniqueThread, wireMessages, wireText } from "../support/runs";

/**
 * Every run path recalls earlier turns past the window: a plain stateful run, the shipped
 * `assistant` (trim) — whose stored thread trim now leaves alone —, an agent whose middleware
 * reads the whole state (`long-chat`), and a run that branches from a checkpoint (recalls from
 * that branch only). The model is sent one system message of dated excerpts before the recent
 * turns; the response's memory report names them.
 */

const tenant = tenantForRuns();
const chat = (body: Record<string, unknown>) => api("/v1/chat/completions", { key: tenant().adminKey, body });
type Report = {
  edgeweave: { memory: { recalled?: { id: string; reason: string; score: number; channels?: { full_text?: unknown; dense?: unknown } }[] } };
};
type State = { checkpoint_id: string; channels: { messages: { id: string; content: string }[] } };
const state = async (thread: string) => (await (await api(`/v1/threads/${thread}/state`, { key: tenant().adminKey })).json()) as State;

const APRIL = Date.UTC(2024, 3, 2, 9, 30);
const filler = (n: number, from = 0) =>
  Array.from({ length: n }, (_, i) => ({
    role: (from + i) % 2 ? "assistant" : "user",
    content: `Chat ${from + i}: the weather stays mild and the office plants are watered every morning before work.`,
  }));

/** A thread far past 8,000 tokens whose early exchange says where the bicycle is. */
async function longThread(extra: Record<string, unknown>[] = []): Promise<string> {
  const thread = uniqueThread("recall");
  const messages = [
    ...filler(4).map((m) => ({ ...m, created_at: APRIL })),
    { id: "bike-q", role: "user", content: "Where did you park the blue bicycle?", created_at: APRIL },
    { id: "bike-a", role: "assistant", content: "Behind the library, next to the old fountain.", created_at: APRIL },
    ...filler(600, 4),
    ...extra,
  ];
  const res = await api(`/v1/threads/${thread}/state`, { key: tenant().adminKey, body: { ops: [{ op: "append", messages }] } });
  expect(res.status).toBe(200);
  return thread;
}

function excerptOf(body: unknown): string | undefined {
  const sent = wireMessages(body);
  return sent.map(wireText).find((t) => t.startsWith("Earlier in this conversation"));
}

describe("recall in runs", () => {
  it("the shipped assistant (trim) recalls the early exchange, dated, before the recent turns; the stored thread keeps every message", async () => {
    const thread = await longThread();
    const fake = fakeOpenAI().reply("By the library.");
    const res = await chat({
      model: "gpt-4o-mini",
      agent: "assistant",
      thread_id: thread,
      messages: [{ role: "user", content: "Remind me: where is my bicycle?" }],
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as Report;
    expect(body.edgeweave.memory.recalled?.map((r) => [r.id, r.reason])).toEqual(
      expect.arrayContaining([
        ["bike-q", "match"],
        ["bike-a", "neighbour"],
      ]),
    );
    const excerpt = excerptOf(fake.calls[0]!.body)!;
    expect(excerpt).toContain("[2024-04-02 09:30 UTC]");
    expect(excerpt).toContain('user: "Where did you park the blue bicycle?"\nassistant: "Behind the library');
    const sent = wireMessages(fake.calls[0]!.body).map(wireText);
    expect(sent.indexOf(excerpt)).toBeLessThan(sent.findIndex((t) => t.startsWith("Chat ")));
    expect(sent.at(-1)).toBe("Remind me: where is my bicycle?");
    // trim shaped what the model saw; the stored thread keeps all 606 messages and the turn.
    const s = await state(thread);
    const stored = (s.channels as unknown as { last_route: { memory: { recalled: { id: string }[] } } }).last_route.memory;
    expect(stored.recalled.map((r) => r.id)).toEqual(body.edgeweave.memory.recalled!.map((r) => r.id));
    expect(JSON.stringify(stored)).not.toContain("bicycle");
    expect(s.channels.messages.length).toBe(608);
    expect(s.channels.messages[4]!.id).toBe("bike-q");
  });

  // By meaning the nearest turns come back for any question (docs/concepts/recall-by-meaning.md): what an unrelated one must not bring is a match by words.
  it("an unrelated question recalls no turn by its words: only the dense channel's nearest, each reported as such", async () => {
    const thread = await longThread();
    const fake = fakeOpenAI().reply("No idea.");
    const res = await chat({
      model: "gpt-4o-mini",
      agent: "assistant",
      thread_id: thread,
      messages: [{ role: "user", content: "Which trains leave early on Sundays?" }],
    });
    const body = (await res.json()) as Report;
    const matches = (body.edgeweave.memory.recalled ?? []).filter((r) => r.reason === "match");
    for (const r of matches) expect(r.channels).toEqual({ dense: expect.objectContaining({ rank: expect.any(Number) }) });
    // The model is sent exactly what the report names.
    if (matches.length === 0) expect(excerptOf(fake.calls[0]!.body)).toBeUndefined();
    else expect(excerptOf(fake.calls[0]!.body)).toBeDefined();
  });

  it("a plain stateful run, an agent whose middleware reads the whole state, and a short follow-up all recall", async () => {
    // llama3.2: a 4,096-token model, so the thread is far past its window.
    const plain = await longThread();
    const fake = fakeOllama().reply("ok").reply("ok").reply("ok");
    const r1 = (await (await chat({ model: "llama3.2", thread_id: plain, messages: [{ role: "user", content: "Where is the bicycle?" }] })).json()) as Report;
    expect(r1.edgeweave.memory.recalled?.map((r) => r.id)).toContain("bike-q");

    const whole = await longThread();
    const r2 = (await (
      await chat({
        model: "llama3.2",
        agent: "planner",
        context: { user_name: "Ada" },
        thread_id: whole,
        messages: [{ role: "user", content: "Where is the bicycle?" }],
      })
    ).json()) as Report;
    expect(excerptOf(fake.calls[1]!.body) ?? "").toContain("blue bicycle");
    expect(r2.edgeweave.memory.recalled?.map((r) => r.id) ?? []).toContain("bike-q");

    // "and then?" has no words to search: the newest turns supply them.
    const short = await longThread([
      { role: "user", content: "Tell me about the blue bicycle again." },
      { role: "assistant", content: "Which part?" },
    ]);
    const r3 = (await (await chat({ model: "llama3.2", thread_id: short, messages: [{ role: "user", content: "and then?" }] })).json()) as Report;
    expect(r3.edgeweave.memory.recalled?.map((r) => r.id) ?? []).toContain("bike-q");
  });

  it("a run from an old checkpoint recalls from that branch, never from the branch it left", async () => {
    const thread = await longThread();
    const before = (await state(thread)).checkpoint_id;
    const zeppelin = await api(`/v1/threads/${thread}/state`, {
      key: tenant().adminKey,
      body: { ops: [{ op: "append", messages: [{ id: "zep", role: "user", content: "The zeppelin lands at noon." }, ...filler(400, 700)] }] },
    });
    expect(zeppelin.status).toBe(200);
    fakeOllama().reply("ok").reply("ok");
    const live = (await (
      await chat({ model: "llama3.2", thread_id: thread, messages: [{ role: "user", content: "When does the zeppelin land?" }] })
    ).json()) as Report;
    expect(live.edgeweave.memory.recalled?.map((r) => r.id)).toContain("zep");
    const branch = (await (
      await chat({
        model: "llama3.2",
        thread_id: thread,
        checkpoint_id: before,
        messages: [{ role: "user", content: "When does the zeppelin land? And the bicycle?" }],
      })
    ).json()) as Report;
    const ids = branch.edgeweave.memory.recalled?.map((r) => r.id) ?? [];
    expect(ids).not.toContain("zep");
    expect(ids).toContain("bike-q");
  });
});
