import { z } from "@hono/zod-openapi";

/**
 * The LangGraph checkpointer's wire and RPC shapes. Values stay opaque: the
 * client serializes them with its own serde and sends `{t, b}` (serde type,
 * base64 bytes); the server stores the bytes and never interprets them, except
 * metadata of type "json", which it parses to filter `list` by.
 * Bodies are strict: a field a route does not take is 400 BEM-011 naming it, never ignored
 * (a prune's misspelt `ns` would prune every namespace).
 */
export const MAX_NS = 1024;
const Id = z.string().min(1).max(256);
const Ns = z.string().max(MAX_NS);
/**
 * A channel's name: a state key, a node's `branch:to:<node>`, LangGraph's own `__pregel_tasks` and such,
 * tens of characters in practice. Bounded because a blob's or write's row holds its name beside a value
 * inline up to LANGGRAPH_CHUNK_BYTES (1.9 MB) and production SQLite refuses a row over 2 MB (a 500 there;
 * workerd does not enforce it): 4,096 characters are at most 12 KiB of UTF-8.
 */
export const MAX_CHANNEL_NAME = 4096;
const Channel = z.string().max(MAX_CHANNEL_NAME, `a channel name is at most ${MAX_CHANNEL_NAME} characters (MAX_CHANNEL_NAME)`);
/**
 * A graph's DeltaChannel channels, named in a read (`delta_channels`, `channels`) and in a checkpoint's
 * metadata (`counters_since_delta_snapshot`, which a prune reads): the saver names every one it has seen
 * in each read, so 64 is what a graph can use at all; each is a channel name.
 */
export const MAX_DELTA_CHANNELS = 64;
const DeltaChannels = z.array(Channel).max(MAX_DELTA_CHANNELS, `at most ${MAX_DELTA_CHANNELS} delta channels (MAX_DELTA_CHANNELS)`);
/** A channel version as a string: the Python saver's are 49 characters, LangGraph JS's are numbers; the same row bound applies. */
export const MAX_CHANNEL_VERSION = 256;
const Version = z.union([
  z.string().max(MAX_CHANNEL_VERSION, `a channel version is at most ${MAX_CHANNEL_VERSION} characters (MAX_CHANNEL_VERSION)`),
  z.number(),
]);
/** What atob decodes (forgiving-base64): padding only on a multiple of 4 characters, never 4n+1 data characters ("A", "AB=" are not). */
const decodable = (s: string) => {
  const data = s.length % 4 === 0 ? s.replace(/={1,2}$/, "") : s;
  return !data.includes("=") && data.length % 4 !== 1;
};
const Base64 = z
  .string()
  .regex(/^[A-Za-z0-9+/]*={0,2}$/, "base64")
  .refine(decodable, "base64 of a whole number of bytes (a multiple of 4 characters when padded; never 4n+1 characters)");

export const TypedWire = z.strictObject({ t: z.string().min(1).max(64), b: Base64 }).openapi("LangGraphValue");
export type TypedWire = z.infer<typeof TypedWire>;

export const PutOp = z.strictObject({
  op: z.literal("put"),
  ns: Ns,
  id: Id,
  parent_id: Id.nullable(),
  /** Checkpoint format version (pending sends of v<4 checkpoints are migrated on read). */
  v: z.number().int(),
  /** channel → version of every channel at this checkpoint (how blobs are joined on read). */
  versions: z
    .record(z.string(), Version)
    .refine((v) => Object.keys(v).every((k) => k.length <= MAX_CHANNEL_NAME), `a channel name is at most ${MAX_CHANNEL_NAME} characters (MAX_CHANNEL_NAME)`),
  checkpoint: TypedWire,
  metadata: TypedWire,
  /** The channels in newVersions: their value at that version, or null when the channel is empty. */
  blobs: z.array(z.strictObject({ channel: Channel, version: Version, value: TypedWire.nullable() })),
});
export const WritesOp = z.strictObject({
  op: z.literal("writes"),
  ns: Ns,
  checkpoint_id: Id,
  task_id: z.string().min(1).max(256),
  task_path: z.string().max(4096),
  /** idx is the position, or the negative WRITES_IDX_MAP slot of a special channel (those replace; others are first-wins). */
  writes: z.array(z.strictObject({ channel: Channel, idx: z.number().int(), value: TypedWire })),
});
/**
 * What one op of a checkpointer batch weighs for the rate limit: its items (a put's blobs, a writes
 * op's writes), at least 1. An op had counted once whatever it carried, so one request of one writes
 * op could store ~16,600 rows (as many as the body's 100,000 JSON items hold, MAX_LANGGRAPH_JSON_ITEMS) for one count.
 */
export const itemsOf = (op: { op: string; blobs?: unknown[]; writes?: unknown[] }): number =>
  Math.max(1, (op.op === "put" ? op.blobs?.length : op.writes?.length) ?? 0);
export const BatchBody = z
  .strictObject({
    ops: z
      .array(z.discriminatedUnion("op", [PutOp, WritesOp]))
      .min(1)
      .max(256),
  })
  .openapi("LangGraphBatch");
export type BatchBody = z.infer<typeof BatchBody>;

export const GetBody = z.strictObject({
  ns: Ns.default(""),
  checkpoint_id: Id.optional(),
  /** Also return the delta-channel history of these channels for the tuple found (saves a round trip). */
  delta_channels: DeltaChannels.optional(),
});
export const ListBody = z.strictObject({
  ns: Ns.optional(),
  checkpoint_id: Id.optional(),
  before: Id.optional(),
  limit: z.number().int().min(1).max(1000).optional(),
  // Each key is checked against every checkpoint row the list reads: bounded like the other lists' fields.
  filter: z
    .record(z.string().max(256), z.unknown())
    .refine((f) => Object.keys(f).length <= 64, "at most 64 keys")
    .optional(),
});
export type ListBody = z.infer<typeof ListBody>;
/**
 * A cross-thread list, paged by threads too: `threads_after` names where this request's window of the
 * tenant's threads (in id order) starts ("" for the first); the answer's `next_threads_after` names the next
 * (a cursor: its thread id with a check, so a value this list never handed out is 400 BEM-011).
 */
export const ListAllBody = ListBody.extend({ threads_after: z.string().max(160).optional() });
export const PruneBody = z
  .strictObject({
    /** Only this namespace ("" is the root graph); default every namespace. */
    ns: Ns.optional(),
    /** Keep the newest N checkpoints of each namespace. */
    keep_last: z.number().int().min(1).optional(),
    /** Delete the checkpoints older than this one (it and everything newer stay). */
    before: Id.optional(),
    /** DeltaChannel channels of the graph: ancestors their history walk needs back to a stored seed stay too. */
    delta_channels: DeltaChannels.optional(),
  })
  .refine((b) => (b.keep_last === undefined) !== (b.before === undefined), { message: "give exactly one of keep_last and before" })
  .openapi("LangGraphPrune");
export type PruneQuery = z.infer<typeof PruneBody>;
export const DeltaBody = z.strictObject({ ns: Ns.default(""), checkpoint_id: Id.optional(), channels: DeltaChannels });

/** Bytes form, inside the Worker and over RPC. */
export type Typed = { t: string; b: Uint8Array };
export type PutRecord = Omit<z.infer<typeof PutOp>, "checkpoint" | "metadata" | "blobs"> & {
  checkpoint: Typed;
  metadata: Typed;
  blobs: { channel: string; version: string | number; value: Typed | null }[];
};
export type WritesRecord = Omit<z.infer<typeof WritesOp>, "writes"> & { writes: { channel: string; idx: number; value: Typed }[] };
export type LgOp = PutRecord | WritesRecord;

export type StoredWrite = { task_id: string; channel: string; value: Typed };
export type StoredTuple = {
  ns: string;
  id: string;
  parent_id: string | null;
  checkpoint: Typed;
  metadata: Typed;
  blobs: { channel: string; value: Typed }[];
  writes: StoredWrite[];
  /** v<4 checkpoints: the parent's TASKS writes, for the pending-sends migration. */
  sends?: Typed[];
};
export type DeltaHistory = Record<string, { seed?: Typed; writes: StoredWrite[] }>;

/** Who writes, and whether it may rewrite what another key wrote (policy `rewrite_thread`, decided by the route). */
export type Writer = { key: string; rewrite: { allowed: true } | { allowed: false; message: string } };
/** One page of tuples; `next_before` when the page was cut to stay under the RPC and response budget. */
export type TuplePage = { tuples: StoredTuple[]; next_before?: string };
export type Head = { ns: string; id: string };
export type GetQuery = { ns: string; checkpoint_id?: string; delta_channels?: string[] };
export type ListQuery = ListBody;
export type DeltaQuery = { ns: string; checkpoint_id?: string; channels: string[] };
