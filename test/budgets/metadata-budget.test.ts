import { describe, expect, it } from "vitest";
import { fakeAnthropic } from "../support/fake-anthropic";
import { fakeOpenAI } from "../support/fake-openai";
import { tenantForRuns, uniqueThread } from "../support/runs";
import { api } from "../support/tenants";

/** Issue 35, item 1: a budget on a metadata value the request sends (models.yaml declares the keys: team, project). */
const tenant = tenantForRuns();
const ANTHROPIC = { "anthropic-version": "2023-06-01" };
const chat = (key: string, metadata?: Record<string, string>) =>
  api("/v1/chat/completions", {
    key,
    body: { model: "gpt-4o-mini", max_tokens: 100, messages: [{ role: "user", content: "hi" }], ...(metadata ? { metadata } : {}) },
  });
const budget = (t: { tenant: string; adminKey: string }, target: unknown) =>
  api(`/v1/admin/tenants/${t.tenant}/budgets`, { key: t.adminKey, body: { kind: "metadata", target, limit_usd: 0.000001 } });
const code = async (res: Response) => ((await res.json()) as { error: { code?: string; bem_code?: string } }).error;

describe("a budget on a metadata value", () => {
  it("caps the calls whose metadata carries it, in each wire format that has metadata, and no other value", async () => {
    const t = tenant();
    const res = await budget(t, "team=search");
    expect(res.status).toBe(201);
    const { id } = (await res.json()) as { id: string };
    const openai = fakeOpenAI().otherwise("ok");
    const anthropic = fakeAnthropic();

    const refused = await chat(t.adminKey, { team: "search" });
    expect(refused.status).toBe(402);
    expect(refused.headers.get("x-edgeweave-budget")).toBe(id);
    expect(await refused.json()).toMatchObject({ error: { code: "BEM-230", budget: { id, kind: "metadata" } } });
    const responses = await api("/v1/responses", {
      key: t.adminKey,
      body: { model: "gpt-4o-mini", max_output_tokens: 100, input: "hi", store: false, metadata: { team: "search", ticket: "T-1" } },
    });
    expect(responses.status).toBe(402);
    const messages = await api("/v1/messages", {
      key: t.adminKey,
      headers: ANTHROPIC,
      body: { model: "claude-sonnet-4", max_tokens: 100, metadata: { user_id: "u-1", team: "search" }, messages: [{ role: "user", content: "hi" }] },
    });
    expect(messages.status).toBe(402);
    expect(await code(messages)).toMatchObject({ type: "billing_error", bem_code: "BEM-230" });
    const invoke = await api("/v1/invoke", {
      key: t.adminKey,
      body: {
        agent_name: "assistant",
        session_id: uniqueThread("s"),
        content: [{ type: "text", text: "hi" }],
        model_override: "gpt-4o-mini",
        metadata: { team: "search" },
      },
    });
    expect(invoke.status).toBe(402);
    expect(openai.calls).toEqual([]);
    expect(anthropic.calls).toEqual([]);

    // Another value of the key, another declared key, and no metadata are not held by it.
    expect((await chat(t.adminKey, { team: "ads" })).status).toBe(200);
    expect((await chat(t.adminKey, { project: "search" })).status).toBe(200);
    expect((await chat(t.adminKey)).status).toBe(200);
  });

  it("a declared key is taken; an unknown key, or a target that is no key=value, is a coded 400 and creates nothing", async () => {
    const t = tenant();
    expect((await budget(t, "project=apollo")).status).toBe(201);
    const targets = async () => {
      const list = await api(`/v1/admin/tenants/${t.tenant}/budgets`, { key: t.adminKey });
      return ((await list.json()) as { budgets: { target: string | null }[] }).budgets.map((b) => b.target);
    };
    const before = await targets();
    for (const target of ["color=red", "team", "team=", "=search", "user_id=u-1", undefined]) {
      const res = await budget(t, target);
      expect(res.status, String(target)).toBe(400);
      expect((await code(res)).code, String(target)).toBe("BEM-011");
    }
    expect(await targets()).toEqual(before);
  });

  it("metadata a format does not keep is refused, not dropped: a key that is no budget tag, a value that is no string", async () => {
    const t = tenant();
    const openai = fakeOpenAI().otherwise("ok");
    const anthropic = fakeAnthropic();
    const chatted = await chat(t.adminKey, { color: "red" });
    expect(chatted.status).toBe(400);
    expect(await code(chatted)).toMatchObject({ code: "BEM-011" });
    const messages = await api("/v1/messages", {
      key: t.adminKey,
      headers: ANTHROPIC,
      body: { model: "claude-sonnet-4", max_tokens: 100, metadata: { team: 7 }, messages: [{ role: "user", content: "hi" }] },
    });
    expect(messages.status).toBe(400);
    expect(await code(messages)).toMatchObject({ bem_code: "BEM-011" });
    expect(openai.calls).toEqual([]);
    expect(anthropic.calls).toEqual([]);
  });
});
