import type { TaskMessage } from "../../src/tasks/consumer";
import { extractionTaskId } from "../../src/queue/messages";

/** A queue message stand-in that records what the consumer decided. */
export class FakeMessage implements TaskMessage {
  readonly id = crypto.randomUUID();
  readonly timestamp = new Date();
  acked = 0;
  retries: (QueueRetryOptions | undefined)[] = [];
  constructor(
    readonly body: unknown,
    readonly attempts = 1,
  ) {}
  ack(): void {
    this.acked++;
  }
  retry(options?: QueueRetryOptions): void {
    this.retries.push(options);
  }
  /** Exactly one decision was taken. */
  get decisions(): number {
    return this.acked + this.retries.length;
  }
}

/** The extract_facts task scheduleExtraction queues after a note-taker turn (tenant, thread, checkpoint), run by hand. */
export async function extractionMessage(
  turn: { tenant: string; thread: string; checkpoint: string },
  key: { id: string; role: "admin" | "member"; grants: string[] },
): Promise<FakeMessage & { taskId: string }> {
  const taskId = await extractionTaskId(turn.tenant, turn.thread, turn.checkpoint);
  const body = { id: taskId, kind: "extract_facts", tenant: turn.tenant, agent: "note-taker", thread_id: turn.thread, checkpoint_id: turn.checkpoint, key };
  return Object.assign(new FakeMessage(body), { taskId });
}
