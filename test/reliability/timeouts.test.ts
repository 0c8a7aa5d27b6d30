/**
 * A provider that never answers (or stalls mid-stream). The shipped models
 * wait 30-120 s, so for these tests any timer of 10 s or more fires after
 * 50 ms instead (the worker shares this isolate's globals): a coded 504 or an
 * error event, and the thread exactly as before.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { readSse, snapshot, uniqueThread } from "../support/runs";
import { fakeOpenAI } from "../support/fake-openai";
import { api, createTenant, type TestTenant } from "../support/tenants";
import { clearUpstream, unmockedRequests } from "../support/upstream";
import { codedErrorProblem, report } from "./support";

let t: TestTenant;
const figures: Record<string, unknown> = {};
beforeAll(async () => {
  t = await createTenant();
});
const realSetTimeout = globalThis.setTimeout;
/** Long timers (the provider deadlines) fire after 50 ms; short ones (backoff) are left alone. */
function compressLongTimers(): void {
  globalThis.setTimeout = ((fn: () => void, ms?: number) => realSetTimeout(fn, (ms ?? 0) >= 10_000 ? 50 : ms)) as typeof setTimeout;
}
afterEach(() => {
  globalThis.setTimeout = realSetTimeout;
  expect(unmockedRequests()).toEqual([]);
  clearUpstream();
});

async function seeded(thread: string) {
  fakeOpenAI().reply("first answer");
  expect(
    (await api("/v1/chat/completions", { key: t.adminKey, body: { model: "gpt-4o-mini", thread_id: thread, messages: [{ role: "user", content: "first" }] } }))
      .status,
  ).toBe(200);
  clearUpstream();
  return snapshot(t.adminKey, thread);
}

describe("provider timeouts", () => {
  it("no answer at all: 504 BEM-072 once the model's timeout passes, nothing saved", async () => {
    const thread = uniqueThread("hang");
    const before = await seeded(thread);
    const fake = fakeOpenAI().hang();
    compressLongTimers();
    const res = await api("/v1/chat/completions", {
      key: t.adminKey,
      body: { model: "gpt-4o-mini", thread_id: thread, messages: [{ role: "user", content: "hello?" }] },
    });
    expect(fake.calls).toHaveLength(1);
    const text = await res.text();
    figures.hang = `${res.status} ${text.slice(0, 120)}`;
    expect(res.status).toBe(504);
    expect(codedErrorProblem({ status: res.status, contentType: res.headers.get("content-type"), text })).toBeNull();
    expect(await snapshot(t.adminKey, thread)).toEqual(before);
  });

  it("a stream that stalls after part of the answer: an error event, never [DONE], nothing saved", async () => {
    const thread = uniqueThread("hang");
    const before = await seeded(thread);
    const fake = fakeOpenAI().cut({ text: "half an answer", chunks: ["half ", "an answer"] }, { stall: true });
    compressLongTimers();
    const res = await api("/v1/chat/completions", {
      key: t.adminKey,
      body: { model: "gpt-4o-mini", thread_id: thread, stream: true, messages: [{ role: "user", content: "hello?" }] },
    });
    const got = await readSse(res);
    expect(fake.calls).toHaveLength(1);
    figures.stall = got.at(-1)?.data.slice(0, 120);
    expect(got.at(-1)?.data).not.toBe("[DONE]");
    expect(JSON.parse(got.at(-1)!.data)).toMatchObject({ error: { code: expect.stringMatching(/^BEM-07\d$/) } });
    expect(await snapshot(t.adminKey, thread)).toEqual(before);
  });
});

afterAll(() => report("timeouts", figures));
