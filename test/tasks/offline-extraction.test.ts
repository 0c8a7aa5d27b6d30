import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { principalForKeyId } from "../../src/auth/tenant-store";
import { extractionWarning } from "../../src/pipeline/extraction-check";
import { agentByName } from "../../src/routing/bundled";
import { consumeTask } from "../../src/tasks/consumer";
import { taskStatus } from "../../src/tasks/store";
import { tenantForRuns, uniqueThread } from "../support/runs";
import { api, createKey } from "../support/tenants";
import { extractionMessage } from "./fake-message";

/**
 * Issue 36: the shipped note-taker dead-lettered under `npm start` (its extraction model needs
 * OPENAI_API_KEY) with `warnings: []` in the reply. Offline the offline model now extracts what the user
 * said of themselves, and a turn whose extraction cannot run says so in its warnings.
 */
const tenant = tenantForRuns();
const noKeys = { ...env, OPENAI_API_KEY: "", ANTHROPIC_API_KEY: "", GROQ_API_KEY: "", NVIDIA_API_KEY: "" };

describe("the note-taker's extraction offline", () => {
  it("runs on the offline model when no provider secret is set, storing what the user said of themselves", async () => {
    const t = tenant();
    const thread = uniqueThread();
    const res = await api("/v1/chat/completions", {
      key: t.adminKey,
      body: { model: "auto", thread_id: thread, messages: [{ role: "user", content: "I live in Rome and I prefer green tea. What about you?" }] },
    });
    expect(res.status).toBe(200);
    const cp = ((await res.json()) as { edgeweave: { checkpoint_id: string } }).edgeweave.checkpoint_id;
    const msg = await extractionMessage({ tenant: t.tenant, thread, checkpoint: cp }, { id: t.adminKeyId, role: "admin", grants: ["*"] });
    expect(await consumeTask({ env: noKeys, waitUntil: () => undefined }, msg)).toBe("done");
    expect(await taskStatus(env.DB, t.tenant, msg.taskId)).toMatchObject({ status: "done", result: { stored: 2, model: "offline-echo" } });
    const { results } = await env.DB.prepare("SELECT kind, key, text FROM facts WHERE tenant_id = ? AND scope = 'organization:acme' ORDER BY created_at")
      .bind(t.tenant)
      .all();
    expect(results).toEqual([
      { kind: "profile", key: "live-in-rome", text: "I live in Rome." },
      { kind: "preference", key: "prefer-green-tea", text: "I prefer green tea." },
    ]);
  });

  it("a turn whose extraction cannot run says why in its warnings", async () => {
    const t = tenant();
    // A member that may not write the agent's extraction scope: its turn runs, its extraction would store nothing.
    const member = await createKey(t.tenant, { role: "member", scopes: ["session:*"] });
    const res = await api("/v1/chat/completions", {
      key: member.key,
      body: {
        model: "auto",
        agent: "note-taker",
        memory_scopes: ["session"],
        thread_id: uniqueThread(),
        messages: [{ role: "user", content: "I live in Oslo." }],
      },
    });
    expect(res.status).toBe(200);
    const { edgeweave } = (await res.json()) as { edgeweave: { warnings: string[] } };
    expect(edgeweave.warnings).toContain("fact extraction of agent 'note-taker' will store nothing: this key may not write 'organization:acme'");

    // Deployed without the extraction model's secret: named, with where it goes.
    const admin = (await principalForKeyId(env.DB, t.tenant, t.adminKeyId))!;
    const run = { agent: agentByName("note-taker"), principal: admin, threadId: "t1" };
    expect(extractionWarning({ ...noKeys, EDGEWEAVE_OFFLINE: "0" }, run)).toMatch(
      /^fact extraction of agent 'note-taker' cannot run: Model 'gpt-4o-mini' needs the server secret OPENAI_API_KEY.*wrangler secret put OPENAI_API_KEY/,
    );
    expect(extractionWarning(noKeys, run)).toBeUndefined();
    expect(extractionWarning(env, run)).toBeUndefined();
  });
});
