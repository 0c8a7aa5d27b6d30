import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { openThreadMeta } from "../../src/thread/sql-schema";
import { StoredResponses } from "../../src/thread/stored-responses";
import { threadObjectName } from "../../src/thread/thread-id";
import { DEFAULT_LIMITS, ThreadStore } from "../../src/thread/thread-store";
import { fakeOpenAI } from "../support/fake-openai";
import { api } from "../support/tenants";
import { tenantForRuns } from "../support/runs";

/**
 * A stored Response is kept in its thread's object beside the checkpoint, and its record holds what
 * the thread's writes do not: the request's echo (every tool's `parameters`, `metadata`, the text
 * format's schema) and its input items again. MAX_THREAD_HISTORY_BYTES counted the checkpoint's
 * writes only, so a key that reaches a thread could store ~1 MiB a turn there outside the cap
 * (a tool definition of any size), and the object grew without bound. The record's bytes are
 * charged to the thread's history total in the same transaction as the checkpoint.
 */
const tenant = tenantForRuns();

async function historyOf(tenantId: string, thread: string): Promise<{ total: number; writes: number; records: number }> {
  const stub = env.THREADS.get(env.THREADS.idFromName(threadObjectName(tenantId, thread)));
  return runInDurableObject(stub, async (_o, state) => {
    const sql = state.storage.sql;
    return {
      total: Number(sql.exec<{ value: string }>(`SELECT value FROM meta WHERE key = 'history_bytes'`).one().value),
      writes: sql.exec<{ b: number }>(`SELECT COALESCE(SUM(length(CAST(json AS BLOB))), 0) AS b FROM writes`).one().b,
      records: sql
        .exec<{ b: number }>(
          `SELECT COALESCE(SUM(length(CAST(body AS BLOB)) + length(CAST(input AS BLOB)) + length(CAST(call_ids AS BLOB))), 0) AS b FROM responses`,
        )
        .one().b,
    };
  });
}

describe("a stored Response counts against the thread's history cap", () => {
  it("the record's bytes (a 300 KB tool schema echoed in it) are in the thread's history total, beside its writes", async () => {
    fakeOpenAI().reply("Fine.").reply("Still fine.");
    const { adminKey, tenant: t } = tenant();
    const big = { type: "object", description: "x".repeat(300_000), properties: {} };
    const tools = [{ type: "function", name: "lookup", parameters: big }];
    const first = (await (await api("/v1/responses", { key: adminKey, body: { model: "gpt-4o-mini", input: "Hi", tools } })).json()) as {
      id: string;
      edgeweave: { thread_id: string };
    };
    const thread = first.edgeweave.thread_id;
    const res = await api("/v1/responses", { key: adminKey, body: { model: "gpt-4o-mini", input: "Again", tools, previous_response_id: first.id } });
    expect(res.status).toBe(200);
    const h = await historyOf(t, thread);
    expect(h.records).toBeGreaterThan(600_000);
    expect(h.total).toBe(h.writes + h.records);
  });

  it("past MAX_THREAD_HISTORY_BYTES (lowered) the record is 413 BEM-019 and the save rolls back whole: no checkpoint, no record", async () => {
    const stub = env.THREADS.get(env.THREADS.idFromName(threadObjectName(tenant().tenant, `hb-${crypto.randomUUID().slice(0, 8)}`)));
    await runInDurableObject(stub, async (_o, state) => {
      const meta = openThreadMeta(state.storage);
      const log = ThreadStore.of(state.storage, { meta, limits: { ...DEFAULT_LIMITS, historyBytes: 20_000 } });
      const responses = new StoredResponses(state.storage.sql);
      const record = (id: string, cp: string) => ({ id, checkpoint_id: cp, call_ids: [], body: "b".repeat(12_000), input: "[]", created_at: 1 });
      const turn = (id: string) =>
        log.update({ ops: [{ op: "append", messages: [{ id, role: "user", content: "hi", created_at: 1 }] }] }, "input", (cp) =>
          log.chargeAlongside(responses.put(record(`resp-${id}`, cp.id))),
        );
      turn("m1");
      expect(() => turn("m2")).toThrow(expect.objectContaining({ code: "BEM-019" }));
      expect(log.state().channels.messages.map((m) => m.id)).toEqual(["m1"]);
      expect([responses.get("resp-m1") !== null, responses.get("resp-m2")]).toEqual([true, null]);
    });
  });
});
