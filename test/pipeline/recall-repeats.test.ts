import { describe, expect, it } from "vitest";
import { fakeOllama } from "../support/fake-ollama";
import { tenantForRuns, uniqueThread, wireMessages, wireText } from "../support/runs";
import { api } from "../support/tenants";

/**
 * Issue 36, "a turn slows down as the work piles up": 8 threads asked the same question turn after
 * turn, and every turn recalled each earlier ask (one more per turn, with its neighbours) until
 * recall's share of the budget was full — 0 turns recalled at first, 241 once about 500 asks had
 * piled up on a thread — each one picked, framed, sent to the model and listed in the response
 * (2 KB → 24 KB). A repeated message is recalled once now, at its newest: the work of a turn no
 * longer grows with the asks before it.
 */

const tenant = tenantForRuns();
const ASK = "Question 0?";
const filler = "The quick brown fox jumps over the lazy dog. ".repeat(4);
/** The bench's thread: long messages first, then the same question asked `n` times, each answered differently. */
const long = (n: number, from = 0) => Array.from({ length: n }, (_, i) => ({ role: (from + i) % 2 ? "assistant" : "user", content: `${from + i}: ${filler}` }));
const asks = (n: number, from: number) =>
  Array.from({ length: n }, (_, i) => [
    { id: `ask-${from + i}`, role: "user", content: ASK },
    { role: "assistant", content: `ok (${from + i} messages seen)` },
  ]).flat();

type Recalled = { id: string; reason: string }[];
type Report = { edgeweave: { memory: { recalled?: Recalled } } };

async function append(thread: string, messages: unknown[]): Promise<void> {
  const res = await api(`/v1/threads/${thread}/state`, { key: tenant().adminKey, body: { ops: [{ op: "append", messages }] } });
  expect(res.status, await res.text()).toBe(200);
}

/** One turn asking ASK again: what recall brought, the response's size, and the excerpt the model was sent. */
async function turn(thread: string, extra: Record<string, unknown> = {}): Promise<{ recalled: Recalled; bytes: number; excerpt: string }> {
  const fake = fakeOllama().reply("ok");
  const res = await api("/v1/chat/completions", {
    key: tenant().adminKey,
    body: { model: "llama3.2", thread_id: thread, memory_scopes: ["session"], messages: [{ role: "user", content: ASK }], ...extra },
  });
  const text = await res.text();
  expect(res.status, text).toBe(200);
  const body = JSON.parse(text) as Report;
  const excerpt =
    wireMessages(fake.last.body)
      .map(wireText)
      .find((t) => t.startsWith("Earlier in this conversation")) ?? "";
  return { recalled: body.edgeweave.memory.recalled ?? [], bytes: text.length, excerpt };
}

/** How many times the excerpt quotes the question. */
const copies = (excerpt: string) => excerpt.split(`user: ${JSON.stringify(ASK)}`).length - 1;

describe("recall of a question asked again and again", () => {
  it("a turn's recall, response and excerpt stay the same size from 60 earlier asks to 600", async () => {
    const thread = uniqueThread("repeats");
    await append(thread, [...long(200), ...asks(60, 0)]);
    const early = await turn(thread);
    await append(thread, asks(270, 60));
    await append(thread, asks(270, 330));
    const late = await turn(thread);
    expect(late.recalled.length).toBeLessThanOrEqual(Math.max(early.recalled.length, 5));
    expect(copies(late.excerpt)).toBeLessThanOrEqual(1);
    expect(late.bytes).toBeLessThan(early.bytes * 1.1 + 200);
    expect(late.excerpt.length).toBeLessThan(Math.max(early.excerpt.length * 1.1, 400));
  });

  it("the asks past the window are matched once, the newest, with its neighbours; a plain run and one that reads the whole state (planner) alike", async () => {
    for (const extra of [{}, { agent: "planner", context: { user_name: "Ada" } }]) {
      const thread = uniqueThread("repeats-past");
      await append(thread, [...long(100), ...asks(300, 0)]);
      await append(thread, long(300, 100));
      const r = await turn(thread, extra);
      expect(r.recalled.filter((t) => t.reason === "match").map((t) => t.id)).toEqual(["ask-299"]);
      expect(r.recalled.length).toBeLessThanOrEqual(5); // the match and two turns either side
      // The newest ask, and the one two turns before it as its neighbour: never more, however many there are.
      expect(copies(r.excerpt)).toBe(2);
    }
  });
});
