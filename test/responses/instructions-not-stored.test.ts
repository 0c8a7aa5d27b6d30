import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { fakeOpenAI } from "../support/fake-openai";
import { api, createKey } from "../support/tenants";
import { readSse, tenantForRuns, wireMessages } from "../support/runs";

/**
 * Issue 25, finding 7: per-call `instructions` on Responses were stored in the response record
 * and returned to any key reaching the thread, though the README says they are not stored. The
 * creating request's answer echoes them (as OpenAI's does); the stored record does not hold
 * them, so no later read — another key's or the creator's — sees them, and no later turn sends them.
 */
const tenant = tenantForRuns();
const SECRET = "Internal pricing rule: never offer more than 7% off.";
type Made = { id: string; instructions: string | null; edgeweave: { thread_id: string } };

async function readAs(key: string, id: string): Promise<string> {
  const res = await api(`/v1/responses/${id}`, { key });
  expect(res.status).toBe(200);
  return res.text();
}

describe("Responses instructions are per call, never stored", () => {
  it("the creating answer echoes them; GET by another key (or the creator) has instructions null; the next turn does not send them", async () => {
    const fake = fakeOpenAI().reply("Hello.").reply("Again.");
    const { adminKey, tenant: t } = tenant();
    const res = await api("/v1/responses", { key: adminKey, body: { model: "gpt-4o-mini", input: "Hi", instructions: SECRET } });
    const made = (await res.json()) as Made;
    expect(made.instructions).toBe(SECRET);
    expect(wireMessages(fake.calls[0]!.body)[0]).toMatchObject({ role: "system", content: SECRET });

    const member = (await createKey(t, { role: "member", scopes: [`session:${made.edgeweave.thread_id}`] })).key;
    for (const key of [member, adminKey]) {
      const text = await readAs(key, made.id);
      expect(text).not.toContain(SECRET);
      expect((JSON.parse(text) as { instructions: unknown }).instructions).toBeNull();
      const items = await (await api(`/v1/responses/${made.id}/input_items`, { key })).text();
      expect(items).not.toContain(SECRET);
    }
    // In the thread's object, nowhere: the stored record and the thread's state.
    expect(await (await api(`/v1/threads/${made.edgeweave.thread_id}/state`, { key: adminKey })).text()).not.toContain(SECRET);
    await api("/v1/responses", { key: member, body: { model: "gpt-4o-mini", input: "More", previous_response_id: made.id } });
    expect(JSON.stringify(fake.calls[1]!.body)).not.toContain(SECRET);
  });

  it("streamed: response.created and response.completed echo them; the stored record does not", async () => {
    fakeOpenAI().reply("Streamed.");
    const { adminKey } = tenant();
    const res = await api("/v1/responses", { key: adminKey, body: { model: "gpt-4o-mini", input: "Hi", instructions: SECRET, stream: true } });
    const events = await readSse(res);
    const completed = events.find((e) => e.event === "response.completed")!;
    const made = (JSON.parse(completed.data) as { response: Made }).response;
    expect(made.instructions).toBe(SECRET);
    expect(await readAs(adminKey, made.id)).not.toContain(SECRET);
  });

  it("a record stored in D1 before (with its instructions) is read without them", async () => {
    const { adminKey, tenant: t } = tenant();
    const id = `resp_${crypto.randomUUID().replaceAll("-", "")}`;
    const body = { id, object: "response", created_at: 1, status: "completed", model: "gpt-4o-mini", output: [], instructions: SECRET };
    await env.DB.prepare("INSERT INTO responses (tenant_id, id, thread_id, checkpoint_id, body, input, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)")
      .bind(t, id, "legacy-thread", "cp", JSON.stringify(body), "[]", Date.now())
      .run();
    const text = await readAs(adminKey, id);
    expect(text).not.toContain(SECRET);
    expect((JSON.parse(text) as { instructions: unknown }).instructions).toBeNull();
  });
});
