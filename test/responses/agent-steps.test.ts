import { describe, expect, it } from "vitest";
import { fakeOpenAI } from "../support/fake-openai";
import { api } from "../support/tenants";
import { readSse, tenantForRuns, uniqueThread } from "../support/runs";

/**
 * An agent that runs its own tools answers in several steps (model → its tools → model). Streamed,
 * every step's text went out joined with no separator, while the unstreamed answer held only the last
 * step's; on Responses, output_text.done and response.completed disagreed with the deltas. Now both
 * forms agree: chat's content is each step's text a blank line apart; a Response has one message
 * item per step, each with its own deltas and done events.
 */
const tenant = tenantForRuns();
const FIRST = "Let me note that.";
const SECOND = "Noted: you live in Lisbon.";
const remember = { id: "call_r1", name: "remember", arguments: { kind: "profile", key: "city", text: "The user lives in Lisbon." } };
const script = () =>
  fakeOpenAI()
    .reply({ text: FIRST, tool_calls: [remember] })
    .reply(SECOND);

const send = (path: string, body: Record<string, unknown>) =>
  api(path, { key: tenant().adminKey, body: { model: "gpt-4o-mini", agent: "memory-assistant", ...body } });
type Item = { type: string; id: string; content?: { text: string }[] };
const texts = (output: Item[]) => output.filter((o) => o.type === "message").map((o) => ({ id: o.id, text: o.content![0]!.text }));

describe("an agent's own tool steps, streamed and not", () => {
  it("chat: each step's text, a blank line apart, in both forms", async () => {
    script();
    const whole = await send("/v1/chat/completions", { thread_id: uniqueThread(), messages: [{ role: "user", content: "I live in Lisbon" }] });
    const content = ((await whole.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content;
    expect(content).toBe(`${FIRST}\n\n${SECOND}`);

    script();
    const streamed = await send("/v1/chat/completions", { thread_id: uniqueThread(), stream: true, messages: [{ role: "user", content: "I live in Lisbon" }] });
    const chunks = (await readSse(streamed))
      .filter((e) => e.data !== "[DONE]")
      .map((e) => JSON.parse(e.data) as { choices: { delta: { content?: string | null } }[] });
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? "").join("")).toBe(content);
  });

  it("responses: one message item per step; each item's deltas, its done events and response.completed agree with the unstreamed output", async () => {
    script();
    const whole = (await (await send("/v1/responses", { input: "I live in Lisbon" })).json()) as { output: Item[] };
    const expected = texts(whole.output).map((t) => t.text);
    expect(expected).toEqual([FIRST, SECOND]);

    script();
    const events = (await readSse(await send("/v1/responses", { input: "I live in Lisbon", stream: true }))).map(
      (e) => JSON.parse(e.data) as { type: string; item_id?: string; delta?: string; text?: string; item?: Item; response?: { output: Item[] } },
    );
    const deltas = new Map<string, string>();
    for (const e of events) if (e.type === "response.output_text.delta") deltas.set(e.item_id!, (deltas.get(e.item_id!) ?? "") + e.delta);
    const done = events.filter((e) => e.type === "response.output_text.done").map((e) => ({ id: e.item_id!, text: e.text! }));
    const itemsDone = events.filter((e) => e.type === "response.output_item.done" && e.item!.type === "message").map((e) => texts([e.item!])[0]);
    const completed = texts(events.find((e) => e.type === "response.completed")!.response!.output);
    expect([...deltas].map(([id, text]) => ({ id, text }))).toEqual(done);
    expect(itemsDone).toEqual(done);
    expect(completed).toEqual(done);
    expect(done.map((d) => d.text)).toEqual(expected);
  });
});
