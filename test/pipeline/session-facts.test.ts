import { afterEach, describe, expect, it } from "vitest";
import { settleBookkeeping } from "../support/bookkeeping";
import { fakeOpenAI } from "../support/fake-openai";
import { tenantForRuns, uniqueThread, wireMessages, wireText } from "../support/runs";
import { api } from "../support/tenants";

/**
 * Facts of the thread's own `session:<thread>` scope load on every run path: a plain run (the newest
 * window), an agent whose middleware reads the whole state (`long-chat`: summarization) and a run that
 * branches from a checkpoint (both read the whole state from the thread's log, not the window).
 */
const tenant = tenantForRuns();
// The turns' usage would otherwise land up to 1 s later, inside another file's count of D1 round trips (turn-io).
afterEach(() => settleBookkeeping(tenant().tenant));
type Memory = { edgeweave: { checkpoint_id: string; memory: { facts: { id: string; loaded: boolean }[] } } };

describe("the session scope's facts", () => {
  it("load in a plain run, an agent run that reads the whole state, and a run from a checkpoint", async () => {
    const thread = uniqueThread("sf");
    const fake = fakeOpenAI().otherwise("ok");
    const written = await api("/v1/memory/facts", {
      key: tenant().adminKey,
      body: { scope: `session:${thread}`, kind: "note", text: "The ticket is INC-4711." },
    });
    expect(written.status).toBe(201);
    const { id } = (await written.json()) as { id: string };
    const chat = async (extra: Record<string, unknown>) => {
      const res = await api("/v1/chat/completions", {
        key: tenant().adminKey,
        body: { model: "gpt-4o-mini", thread_id: thread, messages: [{ role: "user", content: "Which ticket?" }], ...extra },
      });
      expect(res.status).toBe(200);
      return (await res.json()) as Memory;
    };
    const plain = await chat({});
    const wholeState = await chat({ agent: "long-chat" });
    const branched = await chat({ checkpoint_id: plain.edgeweave.checkpoint_id });
    for (const [i, run] of [plain, wholeState, branched].entries()) {
      expect(wireMessages(fake.calls[i]!.body).map(wireText).join("\n"), `run ${i}`).toContain("The ticket is INC-4711.");
      expect(run.edgeweave.memory.facts, `run ${i}`).toEqual([expect.objectContaining({ id, loaded: true })]);
    }
  });
});
