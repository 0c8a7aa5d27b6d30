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
const seed = Array.from({ length: 200 }, (_, i) => ({ role: i % 2 ? "assistant" : "user", content: `${i}: ${filler}` }));
const asks = (n: number, from: number) =>
  Array.from({ length: n }, (_, i) => [
    { role: "user", content: ASK },
    { role: "assistant", content: `ok (${from + i} messages seen)` },
  ]).flat();

type Report = { edgeweave: { memory: { recalled?: { id: string; reason: string }[] } } };

async function append(thread: string, messages: unknown[]): Promise<void> {
  const res = await api(`/v1/threads/${thread}/state`, { key: tenant().adminKey, body: { ops: [{ op: "append", messages }] } });
  expect(res.status, await res.text()).toBe(200);
}

/** One turn asking ASK again: what recall brought, the response's size, and the excerpt the model was sent. */
async function turn(thread: string): Promise<{ recalled: number; bytes: number; excerpt: string }> {
  const fake = fakeOllama().reply("ok");
  const res = await api("/v1/chat/completions", {
    key: tenant().adminKey,
    body: { model: "llama3.2", thread_id: thread, memory_scopes: ["session"], messages: [{ role: "user", content: ASK }] },
  });
  const text = await res.text();
  expect(res.status, text).toBe(200);
  const body = JSON.parse(text) as Report;
  const excerpt =
    wireMessages(fake.last.body)
      .map(wireText)
      .find((t) => t.startsWith("Earlier in this conversation")) ?? "";
  return { recalled: body.edgeweave.memory.recalled?.length ?? 0, bytes: text.length, excerpt };
}

describe("recall of a question asked again and again", () => {
  it("a turn's recall, response and excerpt stay the same size from 60 earlier asks to 600", async () => {
    const thread = uniqueThread("repeats");
    await append(thread, [...seed, ...asks(60, 0)]);
    const early = await turn(thread);
    await append(thread, asks(270, 60));
    await append(thread, asks(270, 330));
    const late = await turn(thread);
    // The earlier asks lie past the window: recall finds them, and brings the question once with its neighbours.
    expect(late.recalled).toBeGreaterThan(0);
    expect(late.recalled).toBeLessThanOrEqual(3);
    expect(late.excerpt.split(`user: ${JSON.stringify(ASK)}`).length - 1).toBe(1);
    expect(late.recalled).toBeLessThanOrEqual(Math.max(early.recalled, 3));
    expect(late.bytes).toBeLessThan(early.bytes * 1.1 + 200);
    expect(late.excerpt.length).toBeLessThan(Math.max(early.excerpt.length * 1.1, 400));
  });
});
