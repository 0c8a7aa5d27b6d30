/**
 * LangGraph checkpoints as the inspector shows them (read-only), from the checkpointer routes'
 * wire tuples (src/langgraph/checkpoint-routes.ts): values arrive as {t: serializer type, b: base64}.
 * Pure (no DOM), tested in test/ui/views.test.ts.
 */
import type { LangGraphTuple, TypedValue } from "./types";

/** A serialized value: "json" is decoded; anything else is named with its size (never evaluated). */
export function decodeTyped(v: TypedValue): unknown {
  const bin = atob(v.b);
  if (v.t !== "json") return `<${v.t}, ${bin.length} bytes>`;
  const bytes = Uint8Array.from(bin, (c) => c.charCodeAt(0));
  const text = new TextDecoder().decode(bytes);
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

export type CheckpointView = {
  ns: string;
  id: string;
  parent: string | null;
  ts: string;
  step: string;
  source: string;
  metadata: unknown;
  channelVersions: [channel: string, version: string][];
  pendingWrites: { task: string; channel: string; value: unknown }[];
  channels: string[];
};

const obj = (v: unknown): Record<string, unknown> => (v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {});

export function checkpointView(t: LangGraphTuple): CheckpointView {
  const cp = obj(decodeTyped(t.checkpoint));
  const meta = decodeTyped(t.metadata);
  const m = obj(meta);
  return {
    ns: t.ns === "" ? "(root)" : t.ns,
    id: t.id,
    parent: t.parent_id,
    ts: typeof cp.ts === "string" ? cp.ts : "",
    step: m.step === undefined ? "" : String(m.step),
    source: typeof m.source === "string" ? m.source : "",
    metadata: meta,
    channelVersions: Object.entries(obj(cp.channel_versions)).map(([c, v]) => [c, String(v)]),
    pendingWrites: t.writes.map((w) => ({ task: w.task_id, channel: w.channel, value: decodeTyped(w.value) })),
    channels: t.blobs.map((b) => b.channel),
  };
}
