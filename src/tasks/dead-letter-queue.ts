import { recordDeadLetter } from "./store";
import { errorText, log } from "../log";

export const DEAD_LETTER_QUEUE = "edgeweave-tasks-dlq";

/** The tenant and task a raw queue body names, when it names them (it may be malformed). */
function describe(body: unknown): { tenant: string; taskId: string | null; kind: string | null } {
  const o = typeof body === "object" && body !== null ? (body as Record<string, unknown>) : {};
  const str = (v: unknown, max: number) => (typeof v === "string" && v.length <= max ? v : null);
  return { tenant: str(o.tenant, 64) ?? "", taskId: str(o.id, 256), kind: str(o.kind, 64) };
}

/**
 * The queue's own dead-letter queue: a task lands here only when the consumer
 * could not even record it as dead (D1 down through every retry). Keeping it in
 * dead_letters now makes it visible to its tenant; if D1 is still down, the
 * message is retried here rather than lost.
 */
export async function consumeDeadLetterBatch(batch: Pick<MessageBatch<unknown>, "messages">, env: Pick<Env, "DB">): Promise<void> {
  for (const m of batch.messages) {
    const who = describe(m.body);
    let body: string;
    try {
      body = JSON.stringify(m.body) ?? "null";
    } catch {
      body = String(m.body);
    }
    try {
      await recordDeadLetter(env.DB, { ...who, body, reason: "retries exhausted on the task queue (reached its dead-letter queue)", attempts: m.attempts });
      m.ack();
    } catch (e) {
      log.error("dead-letter-queue", { message: errorText(e) });
      m.retry({ delaySeconds: 60 });
    }
  }
}
