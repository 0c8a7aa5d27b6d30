import { describe, expect, it } from "vitest";
import idempotencyDoc from "../../docs/reference/idempotency.md?raw";
import { fakeOpenAI } from "../support/fake-openai";
import { messageCount as countMessages, openaiClient, tenantForRuns, uniqueThread, workerSend } from "../support/runs";

/**
 * How the official `openai` client (7.x) sends an Idempotency-Key, as docs/reference/idempotency.md documents it:
 * its `idempotencyKey` request option is sent only by a client class that names an idempotency
 * header (`idempotencyHeader`), and `OpenAI` names none, so the option alone sends nothing. The key
 * goes in the request's `headers`; the client's own retries resend those options, key included.
 */
const tenant = tenantForRuns();

/** The client over the worker; the first answer to a POST is dropped after the worker sent it (a connection lost on the way back). */
function losingFirstAnswer(key: string) {
  const sent: { key: string | null; retry: string | null }[] = [];
  let lost = 0;
  const client = openaiClient(key, 1, async (req) => {
    sent.push({ key: req.headers.get("idempotency-key"), retry: req.headers.get("x-stainless-retry-count") });
    const res = await workerSend(req);
    if (lost++ > 0) return res;
    await res.text(); // the turn ran and its answer was complete
    throw new TypeError("fetch failed");
  });
  return { client, sent };
}
const messageCount = (thread: string) => countMessages(tenant().adminKey, thread);

describe("Idempotency-Key from the official openai client", () => {
  it("in the request's headers: the client's retry after a lost answer is replayed, the turn runs once", async () => {
    const fake = fakeOpenAI().reply("once only");
    const thread = uniqueThread();
    const { client, sent } = losingFirstAnswer(tenant().adminKey);
    const k = `idem-${crypto.randomUUID()}`;
    const { data, response } = await client.chat.completions
      .create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] }, { headers: { "Idempotency-Key": k, "X-Thread-Id": thread } })
      .withResponse();
    expect(sent).toEqual([
      { key: k, retry: "0" },
      { key: k, retry: "1" },
    ]);
    expect(response.headers.get("idempotent-replayed")).toBe("true");
    expect(data.choices[0]?.message.content).toContain("once only");
    expect(fake.calls).toHaveLength(1);
    expect(await messageCount(thread)).toBe(2);
    // A later resend by the app with the same key gets the same response.
    const again = await client.chat.completions.create(
      { model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] },
      { headers: { "Idempotency-Key": k, "X-Thread-Id": thread } },
    );
    expect(again.id).toBe(data.id);
    expect(fake.calls).toHaveLength(1);
  });

  it("docs/reference/idempotency.md documents the way tested here, and that the option alone sends nothing", () => {
    const section = idempotencyDoc;
    expect(section).toContain('{ headers: { "Idempotency-Key": key');
    expect(section).toContain("Its `idempotencyKey` request option alone sends nothing");
  });

  it("the `idempotencyKey` option alone sends no header: the same retry runs the turn twice", async () => {
    const fake = fakeOpenAI().reply("first").reply("second");
    const thread = uniqueThread();
    const { client, sent } = losingFirstAnswer(tenant().adminKey);
    await client.chat.completions.create(
      { model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] },
      { idempotencyKey: `idem-${crypto.randomUUID()}`, headers: { "X-Thread-Id": thread } },
    );
    expect(sent.map((s) => s.key)).toEqual([null, null]);
    expect(fake.calls).toHaveLength(2);
    expect(await messageCount(thread)).toBe(4);
  });
});
