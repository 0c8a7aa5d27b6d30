import { describe, expect, it } from "vitest";
import { fakeOpenAI } from "../support/fake-openai";
import { api } from "../support/tenants";
import { openaiClient, tenantForRuns } from "../support/runs";

/**
 * A Response the model stopped short of finishing is `incomplete`, with the reason in
 * incomplete_details (OpenAI's reference: `max_output_tokens` or `content_filter`), and its stream
 * ends with `response.incomplete`, not `response.completed`. A content-filtered answer read as
 * completed, and a truncated stream ended with response.completed.
 */
const tenant = tenantForRuns();

/** The SSE events of a streamed Responses call, parsed. */
async function events(body: Record<string, unknown>): Promise<{ type: string; response?: Record<string, unknown> }[]> {
  const res = await api("/v1/responses", { key: tenant().adminKey, body: { ...body, stream: true } });
  expect(res.status).toBe(200);
  return (await res.text())
    .split("\n")
    .filter((l) => l.startsWith("data: "))
    .map((l) => JSON.parse(l.slice(6)) as { type: string; response?: Record<string, unknown> });
}

describe("an incomplete Response", () => {
  it("content_filter: status incomplete, incomplete_details.reason content_filter", async () => {
    fakeOpenAI().reply({ text: "I can't", finish: "content_filter" });
    const r = await openaiClient(tenant().adminKey).responses.create({ model: "gpt-4o-mini", input: "something filtered" });
    expect(r.status).toBe("incomplete");
    expect(r.incomplete_details).toEqual({ reason: "content_filter" });
    const stored = await openaiClient(tenant().adminKey).responses.retrieve(r.id);
    expect(stored.incomplete_details).toEqual({ reason: "content_filter" });
  });

  for (const [finish, reason] of [
    ["length", "max_output_tokens"],
    ["content_filter", "content_filter"],
  ] as const)
    it(`streamed, finish ${finish}: the stream ends with response.incomplete (reason ${reason})`, async () => {
      fakeOpenAI().reply({ text: "cut short", chunks: ["cut ", "short"], finish });
      const evs = await events({ model: "gpt-4o-mini", input: "long answer please", max_output_tokens: 16 });
      const last = evs.at(-1)!;
      expect(evs.map((e) => e.type)).not.toContain("response.completed");
      expect(last.type).toBe("response.incomplete");
      expect(last.response).toMatchObject({ status: "incomplete", incomplete_details: { reason } });
    });

  it("an incomplete stream is recorded for its Idempotency-Key like a completed one: the retry is replayed, not run again", async () => {
    const fake = fakeOpenAI().reply({ text: "cut short", chunks: ["cut ", "short"], finish: "length" });
    const body = { model: "gpt-4o-mini", input: "long answer please", stream: true };
    const headers = { "idempotency-key": `idem-${crypto.randomUUID()}` };
    const first = await api("/v1/responses", { key: tenant().adminKey, body, headers });
    const text = await first.text();
    const again = await api("/v1/responses", { key: tenant().adminKey, body, headers });
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(await again.text()).toBe(text);
    expect(fake.calls).toHaveLength(1);
  });

  it("a complete streamed answer still ends with response.completed", async () => {
    fakeOpenAI().reply({ text: "done", chunks: ["do", "ne"] });
    const evs = await events({ model: "gpt-4o-mini", input: "short answer" });
    expect(evs.at(-1)).toMatchObject({ type: "response.completed", response: { status: "completed", incomplete_details: null } });
  });
});
