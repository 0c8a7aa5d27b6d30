import { describe, expect, it } from "vitest";
import { fakeAnthropic } from "../support/fake-anthropic";
import { messageCount, tenantForRuns, uniqueThread } from "../support/runs";
import { api } from "../support/tenants";

/**
 * README: "Streams are recorded whole and replayed" under an Idempotency-Key. A /v1/messages stream
 * ends with Anthropic's `message_stop`, which the record did not take for a completion marker, so it
 * was never kept: the SDK's retry with the same key ran the turn again (a second provider call and a
 * second stored turn).
 */
const tenant = tenantForRuns();

describe("Idempotency-Key on a streamed /v1/messages", () => {
  it("the stream is recorded whole and the retry replayed: one provider call, one turn", async () => {
    const up = fakeAnthropic()
      .reply({ text: "streamed once", chunks: ["streamed ", "once"] })
      .reply("a second run");
    const thread = uniqueThread("idem-stream");
    const body = { model: "claude-sonnet-4", max_tokens: 64, stream: true, thread_id: thread, messages: [{ role: "user", content: "only once" }] };
    const headers = { "anthropic-version": "2023-06-01", "idempotency-key": `idem-${crypto.randomUUID()}` };
    const first = await api("/v1/messages", { key: tenant().adminKey, body, headers });
    const text = await first.text();
    expect(text).toContain("event: message_stop");
    const again = await api("/v1/messages", { key: tenant().adminKey, body, headers });
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(await again.text()).toBe(text);
    expect(up.calls).toHaveLength(1);
    expect(await messageCount(tenant().adminKey, thread)).toBe(2);
  });
});
