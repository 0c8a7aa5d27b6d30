import { describe, expect, it } from "vitest";
import { MessageStream } from "../../src/anthropic/stream";
import { messagesToTurn } from "../../src/anthropic/to-turn";
import type { TurnResult } from "../../src/pipeline/turn";
import { readSse, tenantForRuns } from "../support/runs";
import { fakeAnthropic } from "../support/fake-anthropic";
import { fakeOpenAI } from "../support/fake-openai";
import { api } from "../support/tenants";

/**
 * Issue 22: the stream is Anthropic's documented event sequence, in order and with its fields:
 * message_start, then per block content_block_start / content_block_delta… / content_block_stop
 * (one ping after the first block opens), message_delta (stop_reason, usage), message_stop.
 */
const tenant = tenantForRuns();

type Event = { event: string | undefined; data: Record<string, unknown> };
async function streamed(model: string, body: Record<string, unknown> = {}): Promise<Event[]> {
  const res = await api("/v1/messages?beta=true", {
    key: tenant().adminKey,
    headers: { "anthropic-version": "2023-06-01" },
    body: { model, max_tokens: 128, stream: true, messages: [{ role: "user", content: "hi" }], ...body },
  });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toContain("text/event-stream");
  return (await readSse(res)).map((e) => ({ event: e.event, data: JSON.parse(e.data) as Record<string, unknown> }));
}

const TOOL = { name: "lookup", description: "look up", input_schema: { type: "object", properties: { q: { type: "string" } } } };

describe.each([
  { name: "Anthropic-format upstream", model: "claude-sonnet-4", fake: () => fakeAnthropic() },
  { name: "OpenAI-format upstream", model: "gpt-4o-mini", fake: () => fakeOpenAI() },
])("the /v1/messages event stream, $name", ({ model, fake }) => {
  it("text then a tool call: the exact event order, each event's type field equal to its name", async () => {
    fake().reply({ text: "Let me look.", chunks: ["Let me", " look."], tool_calls: [{ id: "toolu_w1", name: "lookup", arguments: { q: "edge" } }] });
    const events = await streamed(model, { tools: [TOOL] });
    const names = events.map((e) => e.event);
    // Upstream deltas may be split differently; collapse runs of deltas to compare the sequence.
    const collapsed = names.filter((n, i) => !(n === "content_block_delta" && names[i - 1] === "content_block_delta"));
    expect(collapsed).toEqual([
      "message_start",
      "content_block_start",
      "ping",
      "content_block_delta",
      "content_block_stop",
      "content_block_start",
      "content_block_delta",
      "content_block_stop",
      "message_delta",
      "message_stop",
    ]);
    for (const e of events) expect(e.data.type).toBe(e.event);

    const start = events[0]!.data.message as Record<string, unknown>;
    expect(start).toMatchObject({ type: "message", role: "assistant", content: [], stop_reason: null, stop_sequence: null, model });
    expect(String(start.id)).toMatch(/^msg_/);
    expect(start.usage).toMatchObject({ input_tokens: expect.any(Number), output_tokens: 0 });

    const blocks = events.filter((e) => e.event === "content_block_start").map((e) => e.data);
    expect(blocks[0]).toEqual({ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } });
    expect(blocks[1]).toEqual({ type: "content_block_start", index: 1, content_block: { type: "tool_use", id: "toolu_w1", name: "lookup", input: {} } });
    const deltas = events.filter((e) => e.event === "content_block_delta").map((e) => e.data as { index: number; delta: Record<string, string> });
    expect(deltas.filter((d) => d.index === 0).map((d) => d.delta.type)).toEqual(expect.arrayContaining(["text_delta"]));
    expect(
      deltas
        .filter((d) => d.index === 0)
        .map((d) => d.delta.text)
        .join(""),
    ).toBe("Let me look.");
    expect(deltas.filter((d) => d.index === 1).every((d) => d.delta.type === "input_json_delta")).toBe(true);
    expect(
      JSON.parse(
        deltas
          .filter((d) => d.index === 1)
          .map((d) => d.delta.partial_json)
          .join(""),
      ),
    ).toEqual({ q: "edge" });
    const stops = events.filter((e) => e.event === "content_block_stop").map((e) => e.data);
    expect(stops).toEqual([
      { type: "content_block_stop", index: 0 },
      { type: "content_block_stop", index: 1 },
    ]);
    const delta = events.find((e) => e.event === "message_delta")!.data;
    expect(delta.delta).toEqual({ stop_reason: "tool_use", stop_sequence: null });
    expect(delta.usage).toMatchObject({ output_tokens: expect.any(Number), input_tokens: expect.any(Number) });
    expect(events.at(-1)).toEqual({ event: "message_stop", data: { type: "message_stop" } });
  });

  it("a failure after the first byte is an `error` event in Anthropic's shape, and no message_stop", async () => {
    fake().cut({ text: "partial answer" });
    const events = await streamed(model);
    expect(events[0]!.event).toBe("message_start");
    const last = events.at(-1)!;
    expect(last.event).toBe("error");
    expect(last.data).toMatchObject({ type: "error", error: { type: "api_error", bem_code: "BEM-074" } });
    expect(events.some((e) => e.event === "message_stop")).toBe(false);
  });
});

describe("MessageStream (pure)", () => {
  const result = (over: Partial<TurnResult> = {}) =>
    ({ finishReason: "stop", usage: { prompt_tokens: 10, completion_tokens: 3, total_tokens: 13, cost: 0, estimated: false }, ...over }) as TurnResult;

  it("thinking then text: thinking_delta and signature_delta in a thinking block, then the text block", () => {
    const s = new MessageStream("msg_1", 10);
    const out = [
      ...s.start("m"),
      ...s.delta({ type: "delta", thinking: { index: 0, thinking: "" } }),
      ...s.delta({ type: "delta", thinking: { index: 0, thinking: "Hmm." } }),
      ...s.delta({ type: "delta", thinking: { index: 0, signature: "sig" } }),
      ...s.delta({ type: "delta", content: "Answer" }),
      ...s.done(result({ stop: { reason: "end_turn", sequence: null } })),
    ];
    expect(
      out.map((e) => [e.event, (e.data.delta as { type?: string } | undefined)?.type ?? (e.data.content_block as { type?: string } | undefined)?.type ?? ""]),
    ).toEqual([
      ["message_start", ""],
      ["content_block_start", "thinking"],
      ["ping", ""],
      ["content_block_delta", "thinking_delta"],
      ["content_block_delta", "signature_delta"],
      ["content_block_stop", ""],
      ["content_block_start", "text"],
      ["content_block_delta", "text_delta"],
      ["content_block_stop", ""],
      ["message_delta", ""],
      ["message_stop", ""],
    ]);
  });

  it("an empty answer still pings, then message_delta and message_stop", () => {
    const s = new MessageStream("msg_2", 1);
    const out = [...s.start("m"), ...s.done(result({ finishReason: "length" }))].map((e) => e.event);
    expect(out).toEqual(["message_start", "ping", "message_delta", "message_stop"]);
  });
});

describe("messagesToTurn (pure)", () => {
  it("a system message inside messages (Claude Code's per-turn instructions) is an instruction for this call", () => {
    const { messages } = messagesToTurn({
      model: "m",
      max_tokens: 10,
      messages: [
        { role: "user", content: "q" },
        { role: "system", content: [{ type: "text", text: "per-turn rule", cache_control: { type: "ephemeral" } }] },
      ],
    });
    expect(messages).toEqual([
      { role: "user", content: "q" },
      { role: "system", content: [{ type: "text", text: "per-turn rule", cache_control: { type: "ephemeral" } }] },
    ]);
  });

  it("tool results lead their user turn as tool messages; is_error and block content are kept; thinking and documents are parts", () => {
    const { messages, params } = messagesToTurn({
      model: "m",
      max_tokens: 10,
      system: [{ type: "text", text: "sys", cache_control: { type: "ephemeral" } }],
      tool_choice: { type: "any", disable_parallel_tool_use: true },
      stop_sequences: ["END"],
      metadata: { user_id: "u-1" },
      context_management: { edits: [] },
      messages: [
        { role: "user", content: "q" },
        {
          role: "assistant",
          content: [
            { type: "thinking", thinking: "t", signature: "s" },
            { type: "tool_use", id: "toolu_1", name: "f", input: { a: 1 } },
          ],
        },
        {
          role: "user",
          content: [
            { type: "text", text: "also" },
            { type: "tool_result", tool_use_id: "toolu_1", is_error: true, content: [{ type: "text", text: "boom" }] },
          ],
        },
      ],
    });
    expect(messages).toEqual([
      { role: "system", content: [{ type: "text", text: "sys", cache_control: { type: "ephemeral" } }] },
      { role: "user", content: "q" },
      {
        role: "assistant",
        content: [{ type: "thinking", thinking: "t", signature: "s" }],
        tool_calls: [{ id: "toolu_1", type: "function", function: { name: "f", arguments: '{"a":1}' } }],
      },
      { role: "tool", tool_call_id: "toolu_1", content: [{ type: "text", text: "boom" }], is_error: true },
      { role: "user", content: [{ type: "text", text: "also" }] },
    ]);
    expect(params).toMatchObject({
      max_output_tokens: 10,
      tool_choice: "required",
      parallel_tool_calls: false,
      stop: ["END"],
      user: "u-1",
      anthropic: { body: { context_management: { edits: [] } } },
    });
  });
});
