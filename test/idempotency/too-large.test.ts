import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { fakeOpenAI } from "../support/fake-openai";
import { api } from "../support/tenants";
import { readSse, tenantForRuns } from "../support/runs";

/**
 * D1 refuses a value over 2,000,000 bytes, so an Idempotency-Key result bigger than that could
 * not be recorded: the failed write was only logged, the claim kept no result and its lease
 * lapsed, so a retry with the key ran the request a second time (a second provider call, a
 * second turn). A result too large to keep is still answered whole; the record keeps that the
 * request ran (its status, not its body), and a retry with the key is told so with a
 * coded error, never a second run.
 */
const tenant = tenantForRuns();
const idem = () => `idem-${crypto.randomUUID()}`;
const BIG = "x".repeat(2_100_000);
const chat = (extra: Record<string, unknown> = {}) => ({ model: "gpt-4o-mini", messages: [{ role: "user", content: "write a lot" }], ...extra });
const post = (body: unknown, key: string) => api("/v1/chat/completions", { key: tenant().adminKey, body, headers: { "idempotency-key": key } });
const errorOf = async (res: Response) => ((await res.json()) as { error: { code: string; message: string } }).error;

describe("an Idempotency-Key result over D1's 2 MB value limit", () => {
  it("is answered whole; a retry with the key is 422 BEM-131 saying it ran, and nothing runs again", async () => {
    const fake = fakeOpenAI().reply(BIG).reply("a second run");
    const k = idem();
    const first = await post(chat(), k);
    expect(first.status).toBe(200);
    const answer = (await first.json()) as { choices: { message: { content: string } }[] };
    expect(answer.choices[0]!.message.content).toBe(BIG);

    const retry = await post(chat(), k);
    expect(retry.status).toBe(422);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    const error = await errorOf(retry);
    expect(error.code).toBe("BEM-131");
    expect(error.message).toMatch(/ran \(status 200\).*not run again/);
    expect(fake.calls).toHaveLength(1);
    // The record keeps no body: only that the request ran, and how it ended.
    const row = await env.DB.prepare("SELECT status, length(response) AS n FROM idempotency_keys WHERE tenant_id = ? AND key LIKE ?")
      .bind(tenant().tenant, `% ${k}`)
      .first<{ status: number; n: number | null }>();
    expect(row).toEqual({ status: 200, n: null });
  });

  it("a stream too large to keep is answered whole too; its retry is the same coded error", async () => {
    const fake = fakeOpenAI()
      .reply({ text: BIG, chunks: [BIG.slice(0, 1_000_000), BIG.slice(1_000_000)] })
      .reply("a second run");
    const k = idem();
    const events = await readSse(await post(chat({ stream: true }), k));
    expect(events.at(-1)!.data).toBe("[DONE]");
    // The stream is recorded after it ends, in the background: wait for the record.
    let status: number | null = null;
    for (let i = 0; i < 100 && status === null; i++) {
      await new Promise((r) => setTimeout(r, 50));
      status =
        (
          await env.DB.prepare("SELECT status FROM idempotency_keys WHERE tenant_id = ? AND key LIKE ?")
            .bind(tenant().tenant, `% ${k}`)
            .first<{ status: number | null }>()
        )?.status ?? null;
    }
    const retry = await post(chat({ stream: true }), k);
    expect(retry.status).toBe(422);
    expect((await errorOf(retry)).code).toBe("BEM-131");
    expect(fake.calls).toHaveLength(1);
  });

  it("a result under the limit is still replayed as it was", async () => {
    const fake = fakeOpenAI().reply("x".repeat(1_500_000));
    const k = idem();
    const first = await (await post(chat(), k)).text();
    const again = await post(chat(), k);
    expect(again.status).toBe(200);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(await again.text()).toBe(first);
    expect(fake.calls).toHaveLength(1);
  });
});
