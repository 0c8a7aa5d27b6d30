import { z } from "@hono/zod-openapi";
import type { AgentConfig } from "../config/model-config";
import { randomHex, toHex } from "../core/encoding";
import type { Principal } from "../core/principal";

/**
 * Background task messages on the TASKS queue. Every message is validated here
 * before it is sent and again when it is received (a malformed one is
 * dead-lettered, never run). Ids make processing idempotent (tasks_done).
 */
const base = {
  id: z.string().min(1).max(200),
  /** The tenant the task acts for; '' is the operator (system scope). */
  tenant: z.string().max(64),
};

/** One kind of task: its own fields beside the id, the tenant and the kind every task carries. */
const task = <K extends string, F extends z.ZodRawShape>(kind: K, fields: F) => z.object({ ...base, kind: z.literal(kind), ...fields });

export const RememberMemoryTask = task("remember_memory", {
  scope: z.string().min(1).max(200),
  fact_kind: z.string().min(1).max(32),
  text: z.string().min(1).max(16_384),
  /** As POST /v1/memory/facts takes them: a key the scope holds replaces that fact; the expiry is absolute (unix ms), fixed when queued. */
  key: z.string().min(1).max(128).optional(),
  expires_at: z.number().int().optional(),
  /** The queuing key's role: an admin's organization fact loads as a rule (memory/facts.ts isRule). */
  written_by: z.enum(["operator", "admin", "member", "webhook"]).optional(),
});

export const ForgetMemoryTask = task("forget_memory", { fact_id: z.string().min(1).max(200) });

export const SummarizeThreadTask = task("summarize_thread", {
  thread_id: z.string().min(1).max(128),
  /** Newest messages kept verbatim after the summary. */
  keep_messages: z.number().int().min(1).max(1000).default(6),
  model: z.string().max(128).optional(),
});

export const RunWebhookTask = task("run_webhook", {
  webhook_id: z.string().min(1).max(64),
  delivery_id: z.string().min(1).max(128),
});

/**
 * Facts from a saved turn (src/tasks/extract-facts.ts), written with the CURRENT grants of the key
 * (or hook) that ran it: `key.id` is looked up again when the task runs; the rest is a record.
 */
export const ExtractFactsTask = task("extract_facts", {
  agent: z.string().min(1).max(64),
  thread_id: z.string().min(1).max(128),
  checkpoint_id: z.string().min(1).max(64),
  /** Who ran the turn, as the policy knows it: a webhook stays a webhook (which writes facts only if registered to), never a member with its grants. */
  key: z.object({
    id: z.string().max(64),
    role: z.enum(["admin", "member", "webhook"]),
    grants: z.array(z.string().max(200)).max(256),
    write_facts: z.boolean().optional(),
  }),
});

export const Task = z.discriminatedUnion("kind", [RememberMemoryTask, ForgetMemoryTask, SummarizeThreadTask, RunWebhookTask, ExtractFactsTask]);
export type Task = z.infer<typeof Task>;

type WithoutId<T> = T extends unknown ? Omit<T, "id"> & { id?: string } : never;
/** A task to send: the id is generated when absent. */
export type TaskInput = WithoutId<z.input<typeof Task>>;

export const newTaskId = (): string => `task_${randomHex()}`;

/** Validates and sends one task; returns its id. */
export async function enqueueTask(env: Pick<Env, "TASKS">, task: TaskInput, opts: { delaySeconds?: number } = {}): Promise<string> {
  const parsed = Task.parse({ ...task, id: task.id ?? newTaskId() });
  await env.TASKS.send(parsed, { contentType: "json", ...(opts.delaySeconds !== undefined ? { delaySeconds: opts.delaySeconds } : {}) });
  return parsed.id;
}

/** The task id of one turn's extraction: the same turn never extracts twice. */
export async function extractionTaskId(tenant: string, threadId: string, checkpointId: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(`${tenant}\0${threadId}\0${checkpointId}`));
  return `extract_${toHex(new Uint8Array(digest).slice(0, 16))}`;
}

/** Called after a saved turn: queues the extraction when the agent asks for one. */
export async function scheduleExtraction(
  env: Pick<Env, "TASKS">,
  run: { agent?: AgentConfig; principal: Principal; threadId?: string; checkpointId: string | null },
): Promise<string | null> {
  const { agent, principal, threadId, checkpointId } = run;
  const { role } = principal;
  if (!agent?.extract || threadId === undefined || checkpointId === null || principal.kind === "operator" || role === "operator") return null;
  return enqueueTask(env, {
    id: await extractionTaskId(principal.tenant, threadId, checkpointId),
    kind: "extract_facts",
    tenant: principal.tenant,
    agent: agent.name,
    thread_id: threadId,
    checkpoint_id: checkpointId,
    key: { id: principal.keyId, role, grants: principal.grants, ...(principal.writeFacts ? { write_facts: true } : {}) },
  });
}
