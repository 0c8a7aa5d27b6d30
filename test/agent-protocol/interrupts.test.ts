import { describe, expect, it } from "vitest";
import { fakeOpenAI } from "../support/fake-openai";
import { tenantForRuns, wireMessages } from "../support/runs";
import { api } from "../support/tenants";
import { collect, sdkClient } from "./support";

const tenant = tenantForRuns();
const config = { configurable: { model: "gpt-4o-mini" } };
type Msg = { type: string; content: unknown; status?: string; tool_calls?: { name: string; args: unknown }[] };
type Values = { messages: Msg[]; user_name?: string; __interrupt__?: { id: string; value: { action_requests: unknown[]; review_configs: unknown[] } }[] };

/** A thread of the `approver` agent whose last run stopped at its call to set_user_name (human_in_the_loop). */
async function interrupted(name = "Ann") {
  const fake = fakeOpenAI().reply({ tool_calls: [{ id: "call_name", name: "set_user_name", arguments: { new_name: name } }] });
  const client = sdkClient(tenant().adminKey);
  const { thread_id } = await client.threads.create();
  const parts = await collect(
    client.runs.stream(thread_id, "approver", { config, input: { messages: [{ type: "human", content: `call me ${name}` }] }, streamMode: ["values"] }),
  );
  return { fake, client, thread_id, last: parts.at(-1)!.data as Values };
}

describe("human in the loop: an agent's approval tools stop the run, a person's decision resumes it", () => {
  it("the run stops unexecuted with the interrupt Agent Chat UI reads, in the stream, the state, the thread and the run", async () => {
    const { fake, client, thread_id, last } = await interrupted();
    expect(fake.calls).toHaveLength(1);
    expect(last.__interrupt__).toEqual([
      {
        id: expect.any(String),
        value: {
          action_requests: [{ name: "set_user_name", args: { new_name: "Ann" }, description: expect.stringContaining("set_user_name") }],
          review_configs: [{ action_name: "set_user_name", allowed_decisions: ["approve", "edit", "reject"] }],
        },
        when: "during",
        resumable: true,
      },
    ]);
    expect(last.user_name).toBeUndefined();
    const state = await client.threads.getState(thread_id);
    expect(state.next).toEqual(["human_in_the_loop"]);
    expect(state.tasks[0]!.interrupts).toEqual(last.__interrupt__);
    const thread = await client.threads.get(thread_id);
    expect(thread.status).toBe("interrupted");
    expect(Object.values(thread.interrupts)).toEqual([last.__interrupt__]);
    const [run] = await client.runs.list(thread_id);
    expect(run!.status).toBe("interrupted");
  });

  it("approve: the call runs, then the model answers with its result", async () => {
    const { fake, client, thread_id } = await interrupted();
    fake.reply("Hello Ann");
    const values = (await client.runs.wait(thread_id, "approver", { config, command: { resume: { decisions: [{ type: "approve" }] } } })) as Values;
    expect(values.messages.map((m) => m.type)).toEqual(["human", "ai", "tool", "ai"]);
    expect(values.messages[2]).toMatchObject({ content: "User name set to Ann.", status: "success" });
    expect(values.user_name).toBe("Ann");
    expect(values.__interrupt__).toBeUndefined();
    expect(wireMessages(fake.last.body).at(-1)).toMatchObject({ role: "tool", content: "User name set to Ann." });
    expect((await client.threads.get(thread_id)).status).toBe("idle");
  });

  it("edit runs the call with the person's arguments; reject answers it with the person's message", async () => {
    const edited = await interrupted("Ann");
    edited.fake.reply("Hello Bob");
    const e = (await edited.client.runs.wait(edited.thread_id, "approver", {
      config,
      command: { resume: { decisions: [{ type: "edit", edited_action: { name: "set_user_name", args: { new_name: "Bob" } } }] } },
    })) as Values;
    expect(e.user_name).toBe("Bob");

    const rejected = await interrupted("Eve");
    rejected.fake.reply("Understood, I will not.");
    const r = (await rejected.client.runs.wait(rejected.thread_id, "approver", {
      config,
      command: { resume: { decisions: [{ type: "reject", message: "Do not rename me." }] } },
    })) as Values;
    expect(r.user_name).toBeUndefined();
    expect(r.messages[2]).toMatchObject({ type: "tool", content: "Do not rename me.", status: "error" });
    expect(r.messages.at(-1)).toMatchObject({ type: "ai", content: "Understood, I will not." });
  });

  it("a resume with no call waiting, or with the wrong number of decisions: 400, nothing changed", async () => {
    const { client, thread_id } = await interrupted();
    const resume = (decisions: unknown[]) =>
      api(`/v1/agent-protocol/threads/${thread_id}/runs/wait`, {
        key: tenant().adminKey,
        body: { assistant_id: "approver", config, command: { resume: { decisions } } },
      });
    const before = await client.threads.getHistory(thread_id);
    expect((await resume([{ type: "approve" }, { type: "approve" }])).status).toBe(400);
    const plain = (await client.threads.create()).thread_id;
    const none = await api(`/v1/agent-protocol/threads/${plain}/runs/wait`, {
      key: tenant().adminKey,
      body: { assistant_id: "approver", config, command: { resume: { decisions: [{ type: "approve" }] } } },
    });
    expect(none.status).toBe(400);
    expect(((await none.json()) as { error: { message: string } }).error.message).toContain("no tool call waits");
    expect(await client.threads.getHistory(thread_id)).toHaveLength(before.length);
    expect(await client.threads.getHistory(plain)).toEqual([]);
  });
});
