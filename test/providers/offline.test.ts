import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { callModel, streamModel } from "../../src/providers/call";
import { runWithFailover } from "../../src/providers/failover";
import { OFFLINE_LABEL, offlineResponder } from "../../src/providers/offline";
import type { ChatRequest } from "../../src/providers/types";
import { parseSse } from "../../src/providers/sse";
import { unmockedRequests, upstreamRequests } from "../support/upstream";
import { drain, failure, model } from "./helpers";

const offline = model("offline-echo", "custom", { base_url: "http://offline.invalid/v1" }, { offline: true });

const turn: ChatRequest = {
  messages: [
    { role: "system", content: "You are helpful." },
    { role: "system", content: "[preference organization:acme] Answer in French." },
    { role: "system", content: "[style system] Use short sentences." },
    { role: "user", content: "My name is Ada." },
    { role: "assistant", content: "Echo: My name is Ada." },
    { role: "user", content: [{ type: "text", text: "What is my name?" }] },
  ],
};

const expectedText = [
  "Echo: What is my name?",
  "I remember: [preference organization:acme] Answer in French.",
  "I remember: [style system] Use short sentences.",
  "Earlier you said: My name is Ada.",
  "(2 earlier messages in this thread)",
  OFFLINE_LABEL,
].join("\n");

describe("offline echo model", () => {
  it("answers in-process (no network) and visibly reflects memory", async () => {
    const before = upstreamRequests().length;
    const r = await callModel(offline, turn, { env });
    expect(r.message).toEqual({ role: "assistant", content: expectedText });
    expect(r.finish_reason).toBe("stop");
    expect(r.upstream_model).toBe("offline-echo");
    expect(r.usage?.prompt_tokens).toBeGreaterThan(0);
    expect(r.usage?.completion_tokens).toBe(Math.ceil(expectedText.length / 4));
    expect(upstreamRequests().length).toBe(before);
    expect(unmockedRequests()).toEqual([]);
  });

  it("is deterministic", async () => {
    const a = await callModel(offline, turn, { env });
    const b = await callModel(offline, turn, { env });
    expect(a).toEqual(b);
  });

  it("streams the same text, with usage, ending in done", async () => {
    const events = await drain(streamModel(offline, turn, { env }));
    const text = events.map((e) => (e.type === "delta" ? (e.content ?? "") : "")).join("");
    expect(text).toBe(expectedText);
    expect(events.filter((e) => e.type === "done")).toEqual([
      { type: "done", finish_reason: "stop", usage: expect.objectContaining({ prompt_tokens: expect.any(Number) }), upstream_model: "offline-echo" },
    ]);
  });

  it("speaks the exact Chat Completions wire format (JSON and SSE with [DONE] and a usage chunk)", async () => {
    const body = { model: "offline-echo", messages: [{ role: "user", content: "ping" }] };
    const json = await offlineResponder(new Request("http://offline/v1/chat/completions", { method: "POST", body: JSON.stringify(body) }));
    expect(json.headers.get("content-type")).toContain("application/json");
    expect(await json.json()).toEqual({
      id: expect.stringMatching(/^chatcmpl-offline-[0-9a-f]{8}$/),
      object: "chat.completion",
      created: expect.any(Number),
      model: "offline-echo",
      choices: [
        {
          index: 0,
          message: { role: "assistant", content: `Echo: ping\n(0 earlier messages in this thread)\n${OFFLINE_LABEL}`, refusal: null },
          logprobs: null,
          finish_reason: "stop",
        },
      ],
      usage: { prompt_tokens: expect.any(Number), completion_tokens: expect.any(Number), total_tokens: expect.any(Number) },
    });
    const sse = await offlineResponder(
      new Request("http://offline/v1/chat/completions", {
        method: "POST",
        body: JSON.stringify({ ...body, stream: true, stream_options: { include_usage: true } }),
      }),
    );
    expect(sse.headers.get("content-type")).toContain("text/event-stream");
    const frames = (await drain(parseSse((sse.body as ReadableStream<Uint8Array>).values()))).map((f) => f.data);
    expect(frames.at(-1)).toBe("[DONE]");
    const chunks = frames
      .slice(0, -1)
      .map((d) => JSON.parse(d) as { object: string; choices: { delta: unknown; finish_reason: string | null }[]; usage: unknown });
    expect(chunks.every((c) => c.object === "chat.completion.chunk")).toBe(true);
    expect(chunks[0]?.choices[0]?.delta).toEqual({ role: "assistant", content: "" });
    expect(chunks.at(-2)?.choices[0]?.finish_reason).toBe("stop");
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { total_tokens: expect.any(Number) } });
  });

  it("calls a tool when asked to, and reports the tool's answer", async () => {
    const tools = [{ type: "function" as const, function: { name: "get_time", parameters: { type: "object", properties: {} } } }];
    const r = await callModel(offline, { messages: [{ role: "user", content: "please call get_time" }], tools }, { env });
    expect(r.finish_reason).toBe("tool_calls");
    expect(r.message.tool_calls).toEqual([{ id: "call_offline_0", type: "function", function: { name: "get_time", arguments: "{}" } }]);
    const r2 = await callModel(
      offline,
      {
        messages: [
          { role: "user", content: "please call get_time" },
          { role: "assistant", content: null, tool_calls: r.message.tool_calls },
          { role: "tool", tool_call_id: "call_offline_0", content: "12:00" },
        ],
        tools,
      },
      { env },
    );
    expect(r2.message.content).toBe(`The tool answered: 12:00\n${OFFLINE_LABEL}`);
  });

  it("respects the output token limit with finish_reason length", async () => {
    const r = await callModel(offline, { ...turn, max_output_tokens: 3 }, { env });
    expect(r.finish_reason).toBe("length");
    expect(r.message.content).toBe(expectedText.slice(0, 12));
  });

  it("is refused with BEM-077 (403) unless EDGEWEAVE_OFFLINE=1", async () => {
    for (const flag of [undefined, "0", "true"]) {
      const err = await failure(callModel(offline, turn, { env: flag === undefined ? {} : { EDGEWEAVE_OFFLINE: flag } }));
      expect(err).toMatchObject({ code: "BEM-077", status: 403 });
    }
    const err = await failure(runWithFailover([offline], (m) => callModel(m, turn, { env: {} })));
    expect(err).toMatchObject({ code: "BEM-077", status: 403 });
  });
});
