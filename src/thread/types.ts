import type { Channel } from "../embed/fusion";
import { z } from "@hono/zod-openapi";
import { Message, MessageId, MessageInput } from "../core/message";

/**
 * Thread state = channels. `messages` is the messages channel; every other
 * channel has a reducer fixed when it is first written:
 *   last_value  the new value replaces the old one
 *   append      the value is a list whose items are appended to the stored list
 *   merge       the value is an object shallow-merged into the stored object
 */
export const Reducer = z.enum(["last_value", "append", "merge"]);
export type Reducer = z.infer<typeof Reducer>;

/** Why a checkpoint was written: client input, a model/tool step, an admin repair, a fork. */
export const Source = z.enum(["input", "loop", "update", "fork"]);
export type Source = z.infer<typeof Source>;
export const UpdateSource = Source.exclude(["fork"]);
export type UpdateSource = z.infer<typeof UpdateSource>;

/** Names that would reach an object's prototype machinery if used as a key: never channels. */
export const RESERVED_CHANNELS: ReadonlySet<string> = new Set(["__proto__", "constructor", "prototype"]);
export const isReservedChannel = (name: string): boolean => RESERVED_CHANNELS.has(name);

export const ChannelName = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z_][A-Za-z0-9_.-]*$/)
  .refine((n) => n !== "messages", { message: "'messages' is changed with message ops, not set" })
  .refine((n) => !isReservedChannel(n), { message: "__proto__, constructor and prototype are reserved, not channel names" });

export const CheckpointId = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z0-9]+$/);

/** A message's time as a caller may give it: Unix ms, from 1970 to the year 9999. */
const CreatedAt = z.number().int().min(0).max(253_402_300_799_999);

/** One operation of an update, as a caller sends it. Ops apply in order, all or nothing. */
export const UpdateOp = z.discriminatedUnion("op", [
  // A message whose id already exists replaces that message in place (keeps its position and time).
  // `created_at` (Unix ms) dates a new message, e.g. imported history; absent, the write's time.
  z.object({
    op: z.literal("append"),
    messages: z
      .array(MessageInput.extend({ created_at: CreatedAt.optional() }))
      .min(1)
      .max(1000),
  }),
  // Like append of one message, but the id must already exist (BEM-031 otherwise).
  z.object({ op: z.literal("replace"), message: MessageInput.extend({ id: MessageId }) }),
  z.object({ op: z.literal("remove"), id: MessageId }),
  z.object({ op: z.literal("remove_all") }),
  // Writes a channel through its reducer; `reducer` declares it on first write (default last_value).
  z.object({ op: z.literal("set"), channel: ChannelName, value: z.unknown(), reducer: Reducer.optional() }),
]);
export type UpdateOp = z.input<typeof UpdateOp>;

/** A thread write as channel operations (not pipeline/state.ts StateUpdate, a run's channel writes). */
export const ThreadUpdate = z
  .object({ ops: z.array(UpdateOp).min(1).max(1000) })
  .openapi("StateUpdate", { description: "Channel operations applied atomically as one checkpoint." });
export type ThreadUpdate = z.input<typeof ThreadUpdate>;
export type ParsedUpdate = z.output<typeof ThreadUpdate>;
export type { ParsedMessageInput } from "../core/message";

/** A resolved operation as stored in a checkpoint: the delta, replayable without the caller's input. */
export const Write = z.discriminatedUnion("op", [
  z.object({ op: z.literal("put"), message: Message }),
  z.object({ op: z.literal("remove"), id: MessageId }),
  z.object({ op: z.literal("remove_all") }),
  z.object({ op: z.literal("set"), channel: z.string(), reducer: Reducer, value: z.unknown() }),
]);
export type Write = z.infer<typeof Write>;

export const Checkpoint = z
  .object({
    id: CheckpointId,
    parent_id: CheckpointId.nullable(),
    step: z.number().int(),
    source: Source,
    created_at: z.number().int(),
    writes: z.array(Write),
  })
  .openapi("Checkpoint");
export type Checkpoint = z.infer<typeof Checkpoint>;

export const HistoryEntry = Checkpoint.extend({ is_head: z.boolean() }).openapi("HistoryEntry");
export type HistoryEntry = z.infer<typeof HistoryEntry>;

export const History = z
  .object({ checkpoints: z.array(HistoryEntry), next_before: CheckpointId.nullable() })
  .openapi("History", { description: "Checkpoints of every branch, newest first." });
export type History = z.infer<typeof History>;

export const ThreadState = z
  .object({
    thread_id: z.string().optional(),
    /** null while the thread has no checkpoint yet. */
    checkpoint_id: CheckpointId.nullable(),
    step: z.number().int(),
    channels: z.object({ messages: z.array(Message) }).catchall(z.unknown()),
    reducers: z.record(z.string(), Reducer),
  })
  .openapi("ThreadState");
export type ThreadState = z.infer<typeof ThreadState>;

/** One RPC page of a state read: `next_offset` is where the next page of messages starts (null: last page). */
export type StatePage = ThreadState & { next_offset: number | null };
export type StatePageOptions = { offset?: number; maxBytes?: number };

/** An earlier turn recall brought back (src/thread/recall.ts): why, its score, and its run of consecutive turns. */
export const RecalledTurn = z.object({
  message: Message,
  tokens: z.number().int(),
  score: z.number(),
  why: z.enum(["match", "neighbour"]),
  group: z.number().int(),
  /** A match's place in each channel that found it (src/embed/fusion.ts): its rank there and that channel's score. */
  channels: z
    .object({ full_text: z.object({ rank: z.number().int(), score: z.number() }), dense: z.object({ rank: z.number().int(), score: z.number() }) })
    .partial()
    .optional(),
});
export type RecalledTurn = z.infer<typeof RecalledTurn>;

export const LoadRecentResult = z.object({
  /** Oldest to newest. */
  messages: z.array(Message),
  tokens: z.number().int(),
  /** True when older messages exist that were left out. */
  truncated: z.boolean(),
  /** With `recall`: earlier turns recalled for its query, oldest first, and what they cost (framing included). */
  recalled: z.array(RecalledTurn).optional(),
  recalled_tokens: z.number().int().optional(),
  /** With `recall`: why it ran without the dense channel (a remote embedder failed), as a reply's warnings say it. */
  warning: z.string().optional(),
});
export type LoadRecentResult = z.infer<typeof LoadRecentResult>;

/** How recall picks earlier turns (src/thread/recall.ts). */
export type RecallAsk = {
  /** What the turns should be relevant to: the current input (and recent turns when it is short). */
  query: string;
  /** Share of the turn budget recall may use (0..1; 0 = the newest window only). */
  share: number;
  /** Turns brought along on each side of a match. */
  neighbours: number;
  /** The channels that rank (src/embed/fusion.ts); absent: every channel the thread has. */
  channels?: readonly Channel[];
};

/** `recall`: spend part of the budget on earlier turns relevant to its query when the thread does not fit. */
export type LoadRecentOptions = { maxMessages?: number; recall?: RecallAsk };

/** `before`: the page after this checkpoint (exclusive, a previous page's next_before); `from`: the page starting at this one (404 BEM-032 when not in the thread). */
export type HistoryOptions = { before?: string; from?: string; limit?: number };
