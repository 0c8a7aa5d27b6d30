/**
 * Many threads × many concurrent turns through /v1/chat/completions (the
 * offline echo model, half streamed): nothing lost, nothing duplicated, each
 * user message stored right before its own reply, checkpoints in message order,
 * and — since runs on one thread take turns (the thread's run lease) — every
 * reply computed with all the turns saved before it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readSse } from "../support/runs";
import { api, createTenant, type TestTenant } from "../support/tenants";
import { report } from "./support";

const THREADS = 10;
const TURNS = 10;

type Msg = { id: string; role: string; content: unknown };
type Cp = { id: string; step: number; source: string; writes: { op: string; message?: Msg }[] };

let t: TestTenant;
const figures = {
  threads: THREADS,
  turns_per_thread: TURNS,
  turns_sent: 0,
  answered_200: 0,
  turns_lost: 0,
  duplicates: 0,
  pairs_broken: 0,
  order_mismatches: 0,
  stale_context_replies: 0,
};

beforeAll(async () => {
  t = await createTenant();
});

const text = (c: unknown) => (typeof c === "string" ? c : JSON.stringify(c));

async function turn(thread: string, content: string, stream: boolean): Promise<{ status: number; reply: string }> {
  const res = await api("/v1/chat/completions", { key: t.adminKey, body: { model: "auto", thread_id: thread, stream, messages: [{ role: "user", content }] } });
  if (res.status !== 200) return { status: res.status, reply: await res.text() };
  if (!stream) return { status: 200, reply: ((await res.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content };
  const events = await readSse(res);
  if (events.at(-1)?.data !== "[DONE]") return { status: 599, reply: JSON.stringify(events.slice(-2)) };
  const reply = events
    .filter((e) => e.data !== "[DONE]")
    .map((e) => (JSON.parse(e.data) as { choices: { delta: { content?: string } }[] }).choices[0]?.delta.content ?? "")
    .join("");
  return { status: 200, reply };
}

describe(`concurrency: ${THREADS} threads × ${TURNS} concurrent turns`, () => {
  it("every turn saved exactly once, each user message followed by its own reply, checkpoints in message order, no stale context", async () => {
    const run = crypto.randomUUID().slice(0, 6);
    const threads = Array.from({ length: THREADS }, (_, i) => `conc-${run}-${i}`);
    const sent = threads.flatMap((thread, i) => Array.from({ length: TURNS }, (_, j) => ({ thread, content: `t${i}-turn${j}`, stream: j % 2 === 1 })));
    figures.turns_sent = sent.length;
    const answers = await Promise.all(sent.map((s) => turn(s.thread, s.content, s.stream)));
    figures.answered_200 = answers.filter((a) => a.status === 200).length;
    const replyOf = new Map(sent.map((s, i) => [s.content, answers[i]!]));

    for (const thread of threads) {
      const state = (await (await api(`/v1/threads/${thread}/state`, { key: t.adminKey })).json()) as { channels: { messages: Msg[] } };
      const history = (await (await api(`/v1/threads/${thread}/history?limit=100`, { key: t.adminKey })).json()) as { checkpoints: Cp[] };
      const msgs = state.channels.messages;
      const mine = sent.filter((s) => s.thread === thread).map((s) => s.content);
      const users = msgs.filter((m) => m.role === "user").map((m) => text(m.content));
      figures.turns_lost += mine.filter((c) => !users.includes(c)).length;
      figures.duplicates += users.length - new Set(users).size + (msgs.length - new Set(msgs.map((m) => m.id)).size);

      msgs.forEach((m, k) => {
        if (m.role !== "user") return;
        const next = msgs[k + 1];
        const own = next?.role === "assistant" && text(next.content).startsWith(`Echo: ${text(m.content)}\n`);
        if (!own) figures.pairs_broken++;
        // The reply the client got is the reply stored.
        if (own && replyOf.get(text(m.content))?.reply !== text(next!.content)) figures.pairs_broken++;
        // How many earlier messages the model saw vs. how many were stored before this turn: all of them.
        const saw = Number(/\((\d+) earlier messages?/.exec(text(next?.content))?.[1] ?? -1);
        if (saw !== k) figures.stale_context_replies++;
      });

      // Checkpoints oldest first, their appended messages in order = the thread's messages.
      const cps = [...history.checkpoints].reverse();
      const put = cps.flatMap((c) => c.writes.filter((w) => w.op === "put").map((w) => w.message!.id));
      if (put.join() !== msgs.map((m) => m.id).join()) figures.order_mismatches++;
      expect(cps.map((c) => c.step)).toEqual(Array.from({ length: TURNS }, (_, i) => i + 1));
      expect(msgs).toHaveLength(2 * TURNS);
    }

    expect(figures.answered_200).toBe(THREADS * TURNS);
    expect(figures.turns_lost).toBe(0);
    expect(figures.duplicates).toBe(0);
    expect(figures.pairs_broken).toBe(0);
    expect(figures.order_mismatches).toBe(0);
    expect(figures.stale_context_replies).toBe(0);
  });

  it("the thread list holds each thread once", async () => {
    const list = (await (await api("/v1/threads?limit=100", { key: t.adminKey })).json()) as { threads: { thread_id: string }[] };
    const ids = list.threads.map((x) => x.thread_id);
    expect(ids.filter((id) => id.startsWith("conc-"))).toHaveLength(THREADS);
    expect(new Set(ids).size).toBe(ids.length);
  });
});

afterAll(() => {
  report("concurrency", figures);
});
