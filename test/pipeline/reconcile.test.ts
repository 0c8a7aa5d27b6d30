import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { fakeOpenAI } from "../support/fake-openai";
import { api } from "../support/tenants";
import { snapshot, tenantForRuns, uniqueThread, wireMessages, wireText } from "../support/runs";
import { chat, lookupTool, show, stored, type Msg } from "./reconcile-support";

const tenant = tenantForRuns({ memberScopes: ["session:*"] });
const u = (content: string): Msg => ({ role: "user", content });
const a = (content: string): Msg => ({ role: "assistant", content });

describe("resent-history reconciliation on /v1/chat/completions with a thread", () => {
  it("a full-history resend appends only the new message", async () => {
    const fake = fakeOpenAI().reply("A1").reply("A2");
    const key = tenant().adminKey;
    const t = uniqueThread();
    await chat(key, t, [{ role: "system", content: "Be kind." }, u("Q1")]);
    const r = await chat(key, t, [{ role: "system", content: "Be kind." }, u("Q1"), a("A1"), u("Q2")]);
    expect(r.edgeweave.reconciled).toEqual({ matched: 2, appended: 1, branched_from: null });
    expect(await stored(key, t)).toEqual(show([u("Q1"), a("A1"), u("Q2"), a("A2")]));
    expect(wireMessages(fake.last.body).map(wireText)).toEqual(["Be kind.", "Q1", "A1", "Q2"]);
  });

  it("a trailing-window resend appends only the part after the overlap", async () => {
    fakeOpenAI().reply("A1").reply("A2").reply("A3");
    const key = tenant().adminKey;
    const t = uniqueThread();
    await chat(key, t, [u("Q1")]);
    await chat(key, t, [u("Q2")]);
    const r = await chat(key, t, [u("Q2"), a("A2"), u("Q3")]);
    expect(r.edgeweave.reconciled).toEqual({ matched: 2, appended: 1, branched_from: null });
    expect(await stored(key, t)).toEqual(show([u("Q1"), a("A1"), u("Q2"), a("A2"), u("Q3"), a("A3")]));
  });

  it("an edited earlier message continues as a branch from the last common checkpoint", async () => {
    const fake = fakeOpenAI().reply("A1").reply("A2").reply("B2");
    const key = tenant().adminKey;
    const t = uniqueThread();
    const first = await chat(key, t, [u("Q1")]);
    await chat(key, t, [u("Q2")]);
    const r = await chat(key, t, [u("Q1"), a("A1"), u("Q2 edited")]);
    expect(r.edgeweave.reconciled).toEqual({ matched: 2, appended: 1, branched_from: first.edgeweave.checkpoint_id });
    expect(await stored(key, t)).toEqual(show([u("Q1"), a("A1"), u("Q2 edited"), a("B2")]));
    expect(wireMessages(fake.last.body).map(wireText)).toEqual(["Q1", "A1", "Q2 edited"]);
    // Nothing lost: the old branch is still in history.
    const h = (await (await api(`/v1/threads/${t}/history?limit=100`, { key })).json()) as {
      checkpoints: { writes: { op: string; message?: { content: string } }[] }[];
    };
    expect(JSON.stringify(h)).toContain('"A2"');
  });

  it("resending up to an old user message regenerates its reply on a branch", async () => {
    fakeOpenAI().reply("A1").reply("A2").reply("A2 again");
    const key = tenant().adminKey;
    const t = uniqueThread();
    const first = await chat(key, t, [u("Q1")]);
    await chat(key, t, [u("Q2")]);
    const r = await chat(key, t, [u("Q1"), a("A1"), u("Q2")]);
    expect(r.edgeweave.reconciled).toEqual({ matched: 2, appended: 1, branched_from: first.edgeweave.checkpoint_id });
    expect(await stored(key, t)).toEqual(show([u("Q1"), a("A1"), u("Q2"), a("A2 again")]));
  });

  it("a tool loop that resends everything stores each message once (calls and results matched by id)", async () => {
    fakeOpenAI()
      .reply({ tool_calls: [{ id: "call_1", name: "lookup", arguments: { q: "x" } }] })
      .reply({ tool_calls: [{ id: "call_2", name: "lookup", arguments: { q: "y" } }] })
      .reply("done");
    const key = tenant().adminKey;
    const t = uniqueThread();
    const tools = [{ type: "function", function: { name: "lookup", parameters: { type: "object", properties: { q: { type: "string" } } } } }];
    const call = (id: string, q: string): Msg => ({
      role: "assistant",
      content: "",
      tool_calls: [{ id, type: "function", function: { name: "lookup", arguments: `{ "q": "${q}" }` } }],
    });
    const result = (id: string): Msg => ({ role: "tool", tool_call_id: id, content: `result ${id}` });
    const send = (messages: Msg[]) => api("/v1/chat/completions", { key, body: { model: "gpt-4o-mini", thread_id: t, tools, messages } });
    await send([u("find x then y")]);
    await send([u("find x then y"), call("call_1", "x"), result("call_1")]);
    const last = (await (await send([u("find x then y"), call("call_1", "x"), result("call_1"), call("call_2", "y"), result("call_2")])).json()) as {
      edgeweave: { reconciled: unknown };
    };
    expect(last.edgeweave.reconciled).toEqual({ matched: 4, appended: 1, branched_from: null });
    const s = await stored(key, t);
    expect(s.map((x) => x.split("|")[0])).toEqual(["user", "assistant", "tool", "assistant", "tool", "assistant"]);
    expect(s.filter((x) => x.includes("call_1"))).toHaveLength(2);
  });

  it("a resend with nothing new is 400 BEM-109 and stores nothing", async () => {
    fakeOpenAI().reply("A1");
    const key = tenant().adminKey;
    const t = uniqueThread();
    await chat(key, t, [u("Q1")]);
    const before = await stored(key, t);
    const r = await chat(key, t, [u("Q1"), a("A1")]);
    expect(r.status).toBe(400);
    expect(r.error?.code).toBe("BEM-109");
    expect(await stored(key, t)).toEqual(before);
  });

  it("a client sending only new messages is unaffected (the same words twice are two messages)", async () => {
    fakeOpenAI().reply("ok").reply("ok").reply("ok");
    const key = tenant().adminKey;
    const t = uniqueThread();
    await chat(key, t, [u("yes")]);
    await chat(key, t, [u("yes")]);
    const r = await chat(key, t, [u("yes"), u("yes")]);
    expect(r.edgeweave.reconciled).toEqual({ matched: 0, appended: 2, branched_from: null });
    expect(await stored(key, t)).toEqual(show([u("yes"), a("ok"), u("yes"), a("ok"), u("yes"), u("yes"), a("ok")]));
  });

  it("a resend that leaves the stored replies out matches the thread's own messages: nothing stored twice", async () => {
    // Matching only the first message, it stored the rest again: [Q1, A1, Q2, A2] + [Q1, Q2, Q3] held Q1 and Q2 twice.
    const fake = fakeOpenAI().reply("A1").reply("A2").reply("A3");
    const key = tenant().adminKey;
    const t = uniqueThread();
    await chat(key, t, [u("Q1")]);
    const second = await chat(key, t, [u("Q1"), u("Q2")]);
    expect(second.edgeweave.reconciled).toEqual({ matched: 1, appended: 1, branched_from: null });
    const third = await chat(key, t, [u("Q1"), u("Q2"), u("Q3")]);
    expect(third.edgeweave.reconciled).toEqual({ matched: 2, appended: 1, branched_from: null });
    expect(await stored(key, t)).toEqual(show([u("Q1"), a("A1"), u("Q2"), a("A2"), u("Q3"), a("A3")]));
    expect(wireMessages(fake.last.body).map(wireText)).toEqual(["Q1", "A1", "Q2", "A2", "Q3"]);
  });

  it("a resend that leaves the replies out matches a thread whose first message has no reply (a conversation's item), not as a branch", async () => {
    // The thread holds [Q1, Q2, A2] (Q1 an item of the conversation, answered with Q2's turn); the client sends its own messages
    // [Q1, Q2, Q3]. Read as a divergence after Q1, Q2 (Q3 ≠ A2), it branched from Q1's checkpoint: A2 left the head, and a member was refused.
    fakeOpenAI().reply("A2").reply("A3");
    const { adminKey, memberKey } = tenant();
    const conv = (await (await api("/v1/conversations", { key: adminKey, body: { items: [{ type: "message", role: "user", content: "Q1" }] } })).json()) as {
      id: string;
    };
    await chat(adminKey, conv.id, [u("Q2")]);
    const r = await api("/v1/chat/completions", { key: memberKey, body: { model: "gpt-4o-mini", thread_id: conv.id, messages: [u("Q1"), u("Q2"), u("Q3")] } });
    expect(r.status).toBe(200);
    expect(((await r.json()) as { edgeweave: { reconciled: unknown } }).edgeweave.reconciled).toEqual({ matched: 2, appended: 1, branched_from: null });
    expect(await stored(adminKey, conv.id)).toEqual(show([u("Q1"), u("Q2"), a("A2"), u("Q3"), a("A3")]));
  });

  it("a resend whose first reply differs continues as a branch from before it, for a key that may rewrite; a member's is refused, nothing stored", async () => {
    // Matching only the first message, it appended the whole list after the old path: Q1, A1, Q1, A1 edited, Q2.
    const fake = fakeOpenAI().reply("A1").reply("A2");
    const { adminKey, memberKey } = tenant();
    const t = uniqueThread();
    await chat(adminKey, t, [u("Q1")]);
    const member = await api("/v1/chat/completions", {
      key: memberKey,
      body: { model: "gpt-4o-mini", thread_id: t, messages: [u("Q1"), a("A1 edited"), u("Q2")] },
    });
    expect([member.status, ((await member.json()) as { error: { code: string } }).error.code]).toEqual([403, "BEM-022"]);
    expect(await stored(adminKey, t)).toEqual(show([u("Q1"), a("A1")]));

    const r = await chat(adminKey, t, [u("Q1"), a("A1 edited"), u("Q2")]);
    expect(r.edgeweave.reconciled).toEqual({ matched: 0, appended: 3, branched_from: null, reset: true });
    expect(await stored(adminKey, t)).toEqual(show([u("Q1"), a("A1 edited"), u("Q2"), a("A2")]));
    expect(wireMessages(fake.last.body).map(wireText)).toEqual(["Q1", "A1 edited", "Q2"]);
  });

  it("such a resend whose run fails leaves the thread as it was; one that answers empties the head in its own checkpoint", async () => {
    // The reset was a checkpoint of its own, written before the model was called: a failed run left the thread empty.
    fakeOpenAI().reply("A1").status(400).reply("A2");
    const key = tenant().adminKey;
    const t = uniqueThread();
    await chat(key, t, [u("Q1")]);
    const before = await snapshot(key, t);
    const failed = await chat(key, t, [u("Q1"), a("A1 edited"), u("Q2")]);
    expect(failed.status).not.toBe(200);
    expect(await snapshot(key, t)).toEqual(before);

    const r = await chat(key, t, [u("Q1"), a("A1 edited"), u("Q2")]);
    expect(r.edgeweave.reconciled).toEqual({ matched: 0, appended: 3, branched_from: null, reset: true });
    expect(await stored(key, t)).toEqual(show([u("Q1"), a("A1 edited"), u("Q2"), a("A2")]));
    // One checkpoint more than before, on the old head, removing its messages and storing the turn (the old path stays in history).
    const history = (await (await api(`/v1/threads/${t}/history?limit=100`, { key })).json()) as {
      checkpoints: { id: string; parent_id: string | null; writes: { op: string }[] }[];
    };
    const old = (before.history as { checkpoints: { id: string }[] }).checkpoints;
    expect(history.checkpoints).toHaveLength(old.length + 1);
    expect(history.checkpoints[0]!.parent_id).toBe(old[0]!.id);
    expect(history.checkpoints[0]!.writes[0]!.op).toBe("remove_all");
  });

  it("a thread that ends with the client's message (a conversation item) matches it when the list goes on with a reply", async () => {
    fakeOpenAI().reply("A2");
    const key = tenant().adminKey;
    const conv = (await (await api("/v1/conversations", { key, body: { items: [{ type: "message", role: "user", content: "Q1" }] } })).json()) as {
      id: string;
    };
    const r = await chat(key, conv.id, [u("Q1"), a("A1"), u("Q2")]);
    expect(r.edgeweave.reconciled).toEqual({ matched: 1, appended: 2, branched_from: null });
    expect(await stored(key, conv.id)).toEqual(show([u("Q1"), a("A1"), u("Q2"), a("A2")]));
  });

  it("property: any mix of full, trailing-window and new-only resends stores what a new-only client stores", async () => {
    const key = tenant().adminKey;
    // A turn: the user's new words (from a tiny alphabet, so repeats are common) and the scripted reply.
    const turn = fc.record({
      user: fc.constantFrom("hi", "ok", "yes", "tell me more"),
      reply: fc.oneof(fc.constantFrom("ok", "sure", "yes"), fc.constant(null)),
      pattern: fc.oneof(fc.constant<"new">("new"), fc.constant<"full">("full"), fc.integer({ min: 1, max: 6 })),
    });
    let calls = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(turn, { minLength: 1, maxLength: 6 }), async (turns) => {
        const fake = fakeOpenAI();
        const newOnly = uniqueThread("new");
        const resend = uniqueThread("re");
        const transcript: Msg[] = [];
        let pending: Msg[] = [];
        for (const [i, tn] of turns.entries()) {
          const callId = `call_${calls++}`;
          const reply = tn.reply === null ? { tool_calls: [{ id: callId, name: "lookup", arguments: { i } }] } : { text: tn.reply };
          fake.reply(reply).reply(reply);
          const fresh = [...pending, u(tn.user)];
          const sent = tn.pattern === "new" ? fresh : tn.pattern === "full" ? [...transcript, ...fresh] : [...transcript.slice(-tn.pattern), ...fresh];
          const x = await chat(key, newOnly, fresh, [lookupTool]);
          const y = await chat(key, resend, sent, [lookupTool]);
          expect([x.status, y.status, x.error, y.error]).toEqual([200, 200, undefined, undefined]);
          transcript.push(...fresh, x.reply);
          pending = x.reply.tool_calls?.length ? [{ role: "tool", tool_call_id: x.reply.tool_calls[0]!.id, content: `result ${i}` }] : [];
        }
        expect(await stored(key, resend)).toEqual(await stored(key, newOnly));
        expect(await stored(key, newOnly)).toEqual(show(transcript));
      }),
      { seed: 1414, numRuns: 20 },
    );
  });
});
