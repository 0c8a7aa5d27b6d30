import { StreamAccumulator } from "../../src/providers/stream-accumulator";
import type { ChatResult, StreamEvent } from "../../src/providers/types";

/** Drains a provider stream into its ChatResult, as a run's model call does. */
export async function collectStream(events: AsyncIterable<StreamEvent>, modelName: string): Promise<ChatResult> {
  const acc = new StreamAccumulator();
  for await (const ev of events) acc.push(ev);
  return acc.result(modelName);
}
