import type { TaskMessage } from "../../src/tasks/consumer";

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
