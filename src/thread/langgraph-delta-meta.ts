import { AppError } from "../core/errors";
import { MAX_CHANNEL_NAME, MAX_DELTA_CHANNELS, type Typed } from "./langgraph-checkpoint-types";

const COUNTERS = "counters_since_delta_snapshot";
const decoder = new TextDecoder();

/**
 * The DeltaChannel channels a checkpoint's metadata counts toward their next snapshot (LangGraph keeps
 * them in `counters_since_delta_snapshot`); none for metadata of another serde type or without the key.
 */
export function deltaChannelsInMeta(meta: Typed): string[] {
  if (meta.t !== "json") return [];
  const text = decoder.decode(meta.b);
  // Most metadata names no delta channel: skip the parse then.
  if (!text.includes(COUNTERS)) return [];
  try {
    const parsed: unknown = JSON.parse(text);
    const counters = typeof parsed === "object" && parsed !== null ? (parsed as Record<string, unknown>)[COUNTERS] : undefined;
    return typeof counters === "object" && counters !== null ? Object.keys(counters) : [];
  } catch {
    return [];
  }
}

/**
 * A put's metadata names at most MAX_DELTA_CHANNELS delta channels, each a channel name (MAX_CHANNEL_NAME):
 * a prune walks the history of every one it names, and a read names them all again (`delta_channels`).
 */
export function refuseDeltaCounters(id: string, meta: Typed): void {
  const channels = deltaChannelsInMeta(meta);
  const long = channels.find((c) => c.length > MAX_CHANNEL_NAME);
  if (channels.length <= MAX_DELTA_CHANNELS && long === undefined) return;
  throw new AppError(
    "BEM-148",
    long === undefined
      ? `Checkpoint '${id.slice(0, 80)}' metadata's ${COUNTERS} names ${channels.length} delta channels; a graph has at most ${MAX_DELTA_CHANNELS} (MAX_DELTA_CHANNELS)`
      : `Checkpoint '${id.slice(0, 80)}' metadata's ${COUNTERS} names a channel of ${long.length} characters; a channel name is at most ${MAX_CHANNEL_NAME} (MAX_CHANNEL_NAME)`,
  );
}
