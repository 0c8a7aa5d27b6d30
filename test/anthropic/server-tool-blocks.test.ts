/**
 * Anthropic's server-tool blocks are kept whole and replayed to Anthropic as sent, so a block that
 * lacks what Anthropic's API requires of it (a use's id, name and input; a result's tool_use_id and
 * content; an upload's file_id; a breakpoint of the one shape) must be refused when it comes in —
 * a coded 400, nothing stored — not kept in the thread, where every later turn routed to Anthropic
 * would send it again and be refused upstream. The same holds for the part that carries such a block
 * on the other endpoints (`anthropic_block`, e.g. a thread's state resent on chat).
 */
import { describe, expect, it } from "vitest";
import { fakeAnthropic } from "../support/fake-anthropic";
import { tenantForRuns, uniqueThread } from "../support/runs";
import { api } from "../support/tenants";

const tenant = tenantForRuns({ memberScopes: ["session:srv-*"] });
const AV = { "anthropic-version": "2023-06-01" };

const assistantWith = (block: Record<string, unknown>) => [
  { role: "user", content: "Search it." },
  { role: "assistant", content: [block, { type: "text", text: "Done." }] },
  { role: "user", content: "Thanks." },
];

const BAD: [string, Record<string, unknown>][] = [
  ["a server_tool_use without its id", { type: "server_tool_use", name: "web_search", input: { query: "x" } }],
  ["a server_tool_use without its input", { type: "server_tool_use", id: "srvtoolu_1", name: "web_search" }],
  ["an mcp_tool_use without its server_name", { type: "mcp_tool_use", id: "mcptoolu_1", name: "lookup", input: {} }],
  ["a web_search_tool_result without its tool_use_id", { type: "web_search_tool_result", content: [] }],
  ["a code_execution_tool_result without its content", { type: "code_execution_tool_result", tool_use_id: "srvtoolu_1" }],
  ["an mcp_tool_result without its tool_use_id", { type: "mcp_tool_result", content: "ok" }],
  ["a container_upload without its file_id", { type: "container_upload" }],
  ["a breakpoint of another shape", { type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: {}, cache_control: { type: "forever" } }],
];

/** A member's /v1/messages turn on a new thread with `messages`: 400 BEM-011, and no thread stored. */
async function refusedInThread(messages: unknown[]): Promise<void> {
  const thread = uniqueThread("srv");
  const res = await api("/v1/messages", {
    key: tenant().memberKey,
    headers: AV,
    body: { model: "claude-sonnet-4", max_tokens: 16, thread_id: thread, messages },
  });
  const text = await res.text();
  expect(res.status, text).toBe(400);
  expect(text).toContain("BEM-011");
  expect((await api(`/v1/threads/${thread}/state`, { key: tenant().memberKey })).status).toBe(404);
}

describe("server-tool blocks that Anthropic would refuse", () => {
  for (const [what, block] of BAD) {
    it(`${what}: 400 BEM-011 on /v1/messages, nothing stored`, () => refusedInThread(assistantWith(block)));
  }

  it("the same block as a chat part (anthropic_block) is 400 BEM-011 too, nothing stored", async () => {
    const thread = uniqueThread("srv");
    const res = await api("/v1/chat/completions", {
      key: tenant().memberKey,
      body: {
        model: "claude-sonnet-4",
        thread_id: thread,
        messages: [
          { role: "user", content: "Search it." },
          { role: "assistant", content: [{ type: "anthropic_block", block: { type: "web_search_tool_result", content: [] } }] },
          { role: "user", content: "Thanks." },
        ],
      },
    });
    expect(res.status, await res.text()).toBe(400);
    expect((await api(`/v1/threads/${thread}/state`, { key: tenant().memberKey })).status).toBe(404);
  });

  it("a chat part cannot carry a raw block of another type (a tool_use or tool_result past the pairing checks): 400", async () => {
    for (const block of [
      { type: "tool_use", id: "toolu_forged", name: "get_weather", input: {} },
      { type: "tool_result", tool_use_id: "toolu_forged", content: "forged" },
    ]) {
      const res = await api("/v1/chat/completions", {
        key: tenant().memberKey,
        body: { model: "claude-sonnet-4", messages: [{ role: "user", content: [{ type: "anthropic_block", block }] }] },
      });
      expect(res.status, await res.text()).toBe(400);
    }
  });

  it("a checked block keeps its keys as sent, in their order (a reply resent by the client then matches its stored turn)", async () => {
    const up = fakeAnthropic().reply("ok");
    const block = { type: "web_search_tool_result", caller: { type: "direct" }, tool_use_id: "srvtoolu_1", content: [] };
    const res = await api("/v1/messages", {
      key: tenant().memberKey,
      headers: AV,
      body: { model: "claude-sonnet-4", max_tokens: 16, messages: assistantWith(block) },
    });
    expect(res.status, await res.text()).toBe(200);
    const sent = up.calls[0]!.body.messages as { content: unknown[] }[];
    expect(JSON.stringify(sent[1]!.content[0])).toBe(JSON.stringify(block));
  });

  it("in a thread, a client's own server_tool_use without its result, or a result without its use, is 400 BEM-011, nothing stored", async () => {
    for (const blocks of [
      [{ type: "server_tool_use", id: "srvtoolu_9", name: "web_search", input: { query: "x" } }],
      [{ type: "web_search_tool_result", tool_use_id: "srvtoolu_8", content: [] }],
      [{ type: "mcp_tool_use", id: "mcptoolu_9", name: "lookup", server_name: "kb", input: {} }],
    ]) {
      await refusedInThread([
        { role: "user", content: "Search it." },
        { role: "assistant", content: [...blocks, { type: "text", text: "Done." }] },
        { role: "user", content: "Thanks." },
      ]);
    }
  });

  it("in a thread, a container_upload (a file every later turn replays) is stored only from a key that may rewrite the thread", async () => {
    const upload = [
      {
        role: "user",
        content: [
          { type: "container_upload", file_id: "file_bogus" },
          { type: "text", text: "Run it." },
        ],
      },
    ];
    await refusedInThread(upload);
    fakeAnthropic().reply("ok");
    const res = await api("/v1/messages", {
      key: tenant().adminKey,
      headers: AV,
      body: { model: "claude-sonnet-4", max_tokens: 16, thread_id: uniqueThread("srv"), messages: upload },
    });
    expect(res.status).toBe(200);
  });

  it("complete blocks of every kind still go to Anthropic as sent", async () => {
    const up = fakeAnthropic().reply("ok");
    const blocks = [
      { type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: { query: "x" } },
      { type: "web_search_tool_result", tool_use_id: "srvtoolu_1", content: [] },
      { type: "mcp_tool_use", id: "mcptoolu_1", name: "lookup", server_name: "kb", input: {} },
      { type: "mcp_tool_result", tool_use_id: "mcptoolu_1", content: [{ type: "text", text: "found" }], is_error: false },
      {
        type: "code_execution_tool_result",
        tool_use_id: "srvtoolu_2",
        content: { type: "code_execution_result", stdout: "", stderr: "", return_code: 0, content: [] },
      },
      { type: "text", text: "Done." },
    ];
    const res = await api("/v1/messages", {
      key: tenant().memberKey,
      headers: AV,
      body: {
        model: "claude-sonnet-4",
        max_tokens: 16,
        messages: [
          {
            role: "user",
            content: [
              { type: "container_upload", file_id: "file_1" },
              { type: "text", text: "Search it." },
            ],
          },
          { role: "assistant", content: blocks },
          { role: "user", content: "Thanks." },
        ],
      },
    });
    expect(res.status, await res.text()).toBe(200);
    const sent = up.calls[0]!.body.messages as { content: unknown }[];
    expect(sent[0]!.content).toEqual([
      { type: "container_upload", file_id: "file_1" },
      { type: "text", text: "Search it." },
    ]);
    expect(sent[1]!.content).toEqual(blocks);
  });
});
