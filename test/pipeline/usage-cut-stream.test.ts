import { describe, expect, it } from "vitest";
import { fakeOpenAI } from "../support/fake-openai";
import { api } from "../support/tenants";
import { tenantForRuns, uniqueThread } from "../support/runs";
import { waitFor } from "../webhooks/helpers";

/**
 * Issue 25, finding 13: an upstream stream cut after content made a provider call that
 * recorded no usage. Every provider call that the provider began answering is billed, cut ones
 * included: tokens the provider did not report are estimated (the prompt sent, the content
 * received), and the row says how many of its requests were estimated.
 */
const tenant = tenantForRuns();
type Row = { model: string; cause: string; requests: number; estimated_requests: number; prompt_tokens: number; completion_tokens: number };
type Usage = { data: Row[]; total: { requests: number; estimated_requests: number } };

const usage = async (): Promise<Usage> => (await (await api("/v1/usage", { key: tenant().adminKey })).json()) as Usage;
const rowOf = (u: Usage) => u.data.find((r) => r.model === "gpt-4o-mini" && r.cause === "turn");

describe("cut streams are billed", () => {
  for (const [name, path, body] of [
    [
      "chat",
      "/v1/chat/completions",
      (thread: string) => ({ model: "gpt-4o-mini", stream: true, thread_id: thread, messages: [{ role: "user", content: "Tell me a long story" }] }),
    ],
    ["responses", "/v1/responses", () => ({ model: "gpt-4o-mini", stream: true, input: "Tell me a long story" })],
    [
      "invoke",
      "/v1/invoke",
      (thread: string) => ({
        agent_name: "assistant",
        model_override: "gpt-4o-mini",
        session_id: thread,
        stream: true,
        content: [{ type: "text", text: "Tell me a long story" }],
      }),
    ],
  ] as const)
    it(`${name}: a stream cut after content is one billed request, its tokens estimated and marked`, async () => {
      const before = await usage();
      const was = rowOf(before) ?? { requests: 0, estimated_requests: 0, prompt_tokens: 0, completion_tokens: 0 };
      fakeOpenAI().cut({
        text: "Once upon a time there was a very long story that never",
        chunks: ["Once upon a time ", "there was a very long story that never"],
      });
      const thread = uniqueThread("cut");
      const res = await api(path, { key: tenant().adminKey, body: body(thread) });
      const text = await res.text();
      expect(text).toContain("Once upon a time"); // content reached the client before the cut
      const after = await waitFor("usage recorded", async () => {
        const row = rowOf(await usage());
        return row && row.requests > was.requests ? row : undefined;
      });
      expect(after.requests - was.requests).toBe(1);
      expect(after.estimated_requests - was.estimated_requests).toBe(1);
      expect(after.prompt_tokens - was.prompt_tokens).toBeGreaterThan(0);
      expect(after.completion_tokens - was.completion_tokens).toBeGreaterThan(0);
      // Nothing of the cut turn is stored.
      if (name !== "responses") expect((await api(`/v1/threads/${thread}/state`, { key: tenant().adminKey })).status).toBe(404);
    });

  it("an upstream 200 with a malformed body, retried, is billed once per answer (the provider charges each), estimated", async () => {
    const was = rowOf(await usage()) ?? { requests: 0, estimated_requests: 0, prompt_tokens: 0 };
    const garbled = () => new Response('{"id": "chatcmpl-1", "choices": [{"mess', { status: 200, headers: { "content-type": "application/json" } });
    fakeOpenAI().respond(garbled).respond(garbled);
    const res = await api("/v1/chat/completions", { key: tenant().adminKey, body: { model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] } });
    expect(res.status).toBe(502);
    const after = await waitFor("usage recorded", async () => {
      const row = rowOf(await usage());
      return row && row.requests >= was.requests + 2 ? row : undefined;
    });
    expect(after.requests - was.requests).toBe(2);
    expect(after.estimated_requests - was.estimated_requests).toBe(2);
    expect(after.prompt_tokens - was.prompt_tokens).toBeGreaterThan(0);
  });

  it("a completed call with reported usage is not marked estimated", async () => {
    const before = rowOf(await usage()) ?? { requests: 0, estimated_requests: 0 };
    fakeOpenAI().reply("fine");
    expect(
      (await api("/v1/chat/completions", { key: tenant().adminKey, body: { model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] } })).status,
    ).toBe(200);
    const after = await waitFor("usage recorded", async () => {
      const row = rowOf(await usage());
      return row && row.requests > before.requests ? row : undefined;
    });
    expect(after.estimated_requests).toBe(before.estimated_requests);
  });
});
