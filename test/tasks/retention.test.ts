import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import worker from "../../src/index";
import { extractionTaskId } from "../../src/queue/messages";
import { taskStatus } from "../../src/tasks/store";
import { fakeOpenAI } from "../support/fake-openai";
import { tenantForRuns, uniqueThread } from "../support/runs";
import { api, createKey } from "../support/tenants";
import { waitFor } from "../webhooks/helpers";

/**
 * Every turn of an agent with `extract:` queues a task, whoever runs it, and each task leaves a record:
 * `tasks_done` when it ran, `dead_letters` when it was refused (a member that may not write the
 * extraction's scope is refused on every turn). Those records were kept for good, so a member key
 * grew the shared D1 by a row per turn without end. The hourly cron now removes them 30 days after
 * they were written, as it does webhook deliveries.
 */
const tenant = tenantForRuns();
const DAY = 86_400_000;

async function noteTakerTurn(key: string, tenantId: string, text: string) {
  const thread = uniqueThread("ret");
  const res = await api("/v1/chat/completions", {
    key,
    body: { model: "gpt-4o-mini", agent: "note-taker", thread_id: thread, memory_scopes: ["session"], messages: [{ role: "user", content: text }] },
  });
  expect(res.status).toBe(200);
  const { edgeweave } = (await res.json()) as { edgeweave: { checkpoint_id: string } };
  const id = await extractionTaskId(tenantId, thread, edgeweave.checkpoint_id);
  await waitFor("extraction outcome", async () => ((await taskStatus(env.DB, tenantId, id)).status === "pending" ? undefined : true));
  return id;
}

const age = async (table: "tasks_done" | "dead_letters", taskId: string, ms: number) =>
  env.DB.prepare(`UPDATE ${table} SET created_at = ? WHERE task_id = ?`)
    .bind(Date.now() - ms, taskId)
    .run();

describe("task records", () => {
  it("a member's turns leave one record each; the hourly cron removes those 30 days old, newer ones stay", async () => {
    const t = tenant();
    // May read the session only: the extraction into organization:acme is refused on every turn.
    const member = await createKey(t.tenant, { role: "member", scopes: ["session:*"] });
    fakeOpenAI().reply("ok").reply("ok").reply("ok").reply('{"facts":[]}').reply("ok").reply('{"facts":[]}');
    const refusedOld = await noteTakerTurn(member.key, t.tenant, "one");
    const refusedNew = await noteTakerTurn(member.key, t.tenant, "two");
    const doneOld = await noteTakerTurn(t.adminKey, t.tenant, "three");
    const doneNew = await noteTakerTurn(t.adminKey, t.tenant, "four");
    expect((await taskStatus(env.DB, t.tenant, refusedOld)).status).toBe("dead_lettered");
    expect((await taskStatus(env.DB, t.tenant, doneOld)).status).toBe("done");
    await age("dead_letters", refusedOld, 30 * DAY + 60_000);
    await age("tasks_done", doneOld, 30 * DAY + 60_000);
    await age("dead_letters", refusedNew, 29 * DAY);
    await age("tasks_done", doneNew, 29 * DAY);

    const ec = createExecutionContext();
    await worker.scheduled(createScheduledController({ scheduledTime: Date.now(), cron: "17 * * * *" }), env, ec);
    await waitOnExecutionContext(ec);

    expect((await taskStatus(env.DB, t.tenant, refusedOld)).status).toBe("pending");
    expect((await taskStatus(env.DB, t.tenant, doneOld)).status).toBe("pending");
    expect((await taskStatus(env.DB, t.tenant, refusedNew)).status).toBe("dead_lettered");
    expect((await taskStatus(env.DB, t.tenant, doneNew)).status).toBe("done");
    const listed = (await (await api("/v1/tasks/dead-letters", { key: t.adminKey })).json()) as { dead_letters: { task_id: string }[] };
    expect(listed.dead_letters.map((d) => d.task_id)).toEqual([refusedNew]);
  });
});
