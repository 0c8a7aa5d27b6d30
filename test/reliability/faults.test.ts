/**
 * Provider faults (500, 503, 429, 4xx, cut bodies and streams), scripted at
 * random with a fixed seed, streamed or not, on one model or with failover to a
 * second: every turn either succeeds and is saved whole (input + reply, one
 * checkpoint, the reply the client saw) or fails with a coded error and leaves
 * the thread exactly as it was. Never half a turn.
 */
import fc from "fast-check";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { readSse, snapshot, uniqueThread } from "../support/runs";
import { fakeOpenAI, type FakeOpenAI } from "../support/fake-openai";
import { api, createTenant, type TestTenant } from "../support/tenants";
import { clearUpstream, unmockedRequests } from "../support/upstream";
import { codedErrorProblem, report, SEED } from "./support";

type Fault = "ok" | "500" | "503" | "429" | "400" | "401" | "cut";
type Case = { script: Fault[]; stream: boolean; failover: boolean };

let t: TestTenant;
const figures = { cases: 0, succeeded: 0, coded_errors: 0, stream_error_events: 0, half_saved: 0, uncoded: 0, codes: {} as Record<string, number> };

beforeAll(async () => {
  t = await createTenant();
});
afterEach(() => {
  expect(unmockedRequests()).toEqual([]);
  clearUpstream();
});

function script(fake: FakeOpenAI, faults: Fault[], reply: string): void {
  for (const f of faults) {
    if (f === "ok") fake.reply({ text: reply, chunks: [reply.slice(0, 5), reply.slice(5)] });
    else if (f === "cut") fake.cut({ text: `${reply} (cut)`, chunks: ["partial ", "answer"] });
    else if (f === "429") fake.status(429, { retryAfter: 0 });
    else fake.status(Number(f));
  }
}

type Msg = { role: string; content: unknown };
type Snap = Awaited<ReturnType<typeof snapshot>>;
const messagesIn = (s: Snap) => (s.state as { channels: { messages: Msg[] } }).channels.messages;
const checkpointsIn = (s: Snap) => (s.history as { checkpoints: unknown[] }).checkpoints;

/** Runs one turn under `c`; returns what the client saw: the reply text, or the error code. */
async function faultyTurn(thread: string, c: Case, reply: string): Promise<{ ok: true; text: string } | { ok: false; code: string; problem: string | null }> {
  script(fakeOpenAI(), c.script, reply);
  const body = {
    model: c.failover ? "auto" : "gpt-4o-mini",
    // json + tools leaves two OpenAI candidates (gpt-4o-mini, then gpt-4o): two tries each.
    ...(c.failover ? { capabilities: ["json", "tools"] } : {}),
    thread_id: thread,
    stream: c.stream,
    messages: [{ role: "user", content: `question ${reply}` }],
  };
  const res = await api("/v1/chat/completions", { key: t.adminKey, body });
  const contentType = res.headers.get("content-type");
  if (res.status !== 200) {
    const text = await res.text();
    let code = "?";
    try {
      code = (JSON.parse(text) as { error: { code: string } }).error.code;
    } catch {
      // left as "?": codedErrorProblem reports it
    }
    return { ok: false, code, problem: codedErrorProblem({ status: res.status, contentType, text }) };
  }
  if (!c.stream) return { ok: true, text: ((await res.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content };
  const events = await readSse(res);
  const last = events.at(-1)?.data;
  const payloads = events
    .filter((e) => e.data !== "[DONE]")
    .map((e) => JSON.parse(e.data) as { choices?: { delta: { content?: string } }[]; error?: { code: string; message: string } });
  if (last === "[DONE]") return { ok: true, text: payloads.map((p) => p.choices?.[0]?.delta.content ?? "").join("") };
  figures.stream_error_events++;
  const err = payloads.at(-1)?.error;
  // An SSE error event: {error:{code,message}} (plus the failover attempts, if any).
  const problem = err && /^BEM-\d{3}$/.test(err.code) && typeof err.message === "string" ? null : `stream ended without [DONE] or a coded error: ${last}`;
  return { ok: false, code: err?.code ?? "?", problem };
}

describe("provider faults: a coded error or a whole saved turn, never half", () => {
  it("random fault scripts (fixed seed): streamed and not, one model and failover", async () => {
    // Fatal 4xx stop a run at once, so they are rarer than retryable faults.
    const w = (weight: number, ...f: Fault[]) => ({ weight, arbitrary: fc.constantFrom(...f) });
    const faults = fc.oneof(w(3, "ok"), w(3, "500", "503"), w(2, "429"), w(2, "cut"), w(1, "400", "401"));
    const cases = fc.sample(fc.record({ script: fc.array(faults, { minLength: 4, maxLength: 4 }), stream: fc.boolean(), failover: fc.boolean() }), {
      seed: SEED,
      numRuns: 40,
    });
    const problems: string[] = [];
    for (const [i, c] of cases.entries()) {
      const thread = uniqueThread("fault");
      // One good turn first, so "unchanged" means something.
      fakeOpenAI().reply("first answer");
      expect(
        (
          await api("/v1/chat/completions", {
            key: t.adminKey,
            body: { model: "gpt-4o-mini", thread_id: thread, messages: [{ role: "user", content: "first" }] },
          })
        ).status,
      ).toBe(200);
      clearUpstream();
      const before = await snapshot(t.adminKey, thread);
      const reply = `answer number ${i}`;
      const out = await faultyTurn(thread, c, reply);
      clearUpstream();
      const after = await snapshot(t.adminKey, thread);
      figures.cases++;
      const label = `${JSON.stringify(c)}`;
      if (out.ok) {
        figures.succeeded++;
        const added = messagesIn(after).slice(messagesIn(before).length);
        const whole =
          added.length === 2 &&
          added[0]?.content === `question ${reply}` &&
          added[1]?.content === out.text &&
          checkpointsIn(after).length === checkpointsIn(before).length + 1;
        if (out.text !== reply) problems.push(`${label}: succeeded with ${JSON.stringify(out.text)}`);
        if (!whole) {
          figures.half_saved++;
          problems.push(`${label}: success but saved ${JSON.stringify(added)}`);
        }
      } else {
        figures.coded_errors++;
        figures.codes[out.code] = (figures.codes[out.code] ?? 0) + 1;
        if (out.problem) {
          figures.uncoded++;
          problems.push(`${label}: ${out.problem}`);
        }
        if (JSON.stringify(after) !== JSON.stringify(before)) {
          figures.half_saved++;
          problems.push(`${label}: failed with ${out.code} but the thread changed`);
        }
      }
    }
    expect(problems).toEqual([]);
    // The seed covers both outcomes.
    expect(figures.succeeded).toBeGreaterThan(0);
    expect(figures.coded_errors).toBeGreaterThan(0);
  });

  it("every try answering 500: 502 with a BEM code, nothing saved", async () => {
    const thread = uniqueThread("fault");
    const before = await snapshot(t.adminKey, thread);
    fakeOpenAI().status(500).status(500);
    const res = await api("/v1/chat/completions", {
      key: t.adminKey,
      body: { model: "gpt-4o-mini", thread_id: thread, messages: [{ role: "user", content: "hi" }] },
    });
    const text = await res.text();
    expect(res.status).toBe(502);
    expect(codedErrorProblem({ status: res.status, contentType: res.headers.get("content-type"), text })).toBeNull();
    expect(await snapshot(t.adminKey, thread)).toEqual(before);
  });

  it("429 on every try: 429 with retry-after, nothing saved", async () => {
    const thread = uniqueThread("fault");
    fakeOpenAI().status(429, { retryAfter: 0 }).status(429, { retryAfter: 0 });
    const res = await api("/v1/chat/completions", {
      key: t.adminKey,
      body: { model: "gpt-4o-mini", thread_id: thread, messages: [{ role: "user", content: "hi" }] },
    });
    const text = await res.text();
    expect(res.status).toBe(429);
    expect(codedErrorProblem({ status: res.status, contentType: res.headers.get("content-type"), text })).toBeNull();
    expect(res.headers.get("retry-after")).not.toBeNull();
    expect((await snapshot(t.adminKey, thread)).status).toBe(404);
  });
});

afterAll(() => report("faults", figures));
