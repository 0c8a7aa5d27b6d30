import { describe, expect, it } from "vitest";
import { fakeAnthropic } from "../support/fake-anthropic";
import { fakeOpenAI } from "../support/fake-openai";
import { tenantForRuns } from "../support/runs";
import { api } from "../support/tenants";

/** Issue 35, item 1: a budget on the end user a request names (OpenAI's and Responses' `user`, Anthropic's `metadata.user_id`). */
const tenant = tenantForRuns();
const chat = (key: string, user?: string) =>
  api("/v1/chat/completions", {
    key,
    body: { model: "gpt-4o-mini", max_tokens: 100, messages: [{ role: "user", content: "hi" }], ...(user !== undefined ? { user } : {}) },
  });

describe("a budget on an end user", () => {
  it("caps the calls that name that user, in each wire format, and no other", async () => {
    const t = tenant();
    const res = await api(`/v1/admin/tenants/${t.tenant}/budgets`, {
      key: t.adminKey,
      body: { kind: "user", target: "alice@example.com", limit_usd: 0.000001 },
    });
    expect(res.status).toBe(201);
    const { id } = (await res.json()) as { id: string };
    const openai = fakeOpenAI().otherwise("ok");
    const refused = await chat(t.adminKey, "alice@example.com");
    expect(refused.status).toBe(402);
    expect(await refused.json()).toMatchObject({ error: { code: "BEM-230", budget: { id, kind: "user" } } });
    const responses = await api("/v1/responses", {
      key: t.adminKey,
      body: { model: "gpt-4o-mini", max_output_tokens: 100, input: "hi", user: "alice@example.com" },
    });
    expect(responses.status).toBe(402);
    const anthropic = fakeAnthropic();
    const messages = await api("/v1/messages", {
      key: t.adminKey,
      headers: { "anthropic-version": "2023-06-01" },
      body: { model: "claude-sonnet-4", max_tokens: 100, metadata: { user_id: "alice@example.com" }, messages: [{ role: "user", content: "hi" }] },
    });
    expect(messages.status).toBe(402);
    expect(anthropic.calls).toEqual([]);
    expect(openai.calls).toEqual([]);
    // Another user, and a call naming none, are not held by it.
    expect((await chat(t.adminKey, "bob@example.com")).status).toBe(200);
    expect((await chat(t.adminKey)).status).toBe(200);
  });

  it("a user budget needs the user's id: none, empty or too long is a coded 400", async () => {
    const t = tenant();
    for (const target of [undefined, "", "x".repeat(129)]) {
      const res = await api(`/v1/admin/tenants/${t.tenant}/budgets`, {
        key: t.adminKey,
        body: { kind: "user", limit_usd: 1, ...(target !== undefined ? { target } : {}) },
      });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe("BEM-011");
    }
  });
});
