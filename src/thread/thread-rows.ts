import { z } from "@hono/zod-openapi";
import { Message } from "../core/message";
import { estimateTokens } from "../core/tokens";
import { type Checkpoint, Source, Write } from "./types";

/**
 * How a thread's rows are written and read back. Every JSON column is decoded
 * through its schema, not cast: a row that does not fit (a bug, or a row of a
 * future release read by an older one) fails loudly where it is read instead
 * of travelling on as a wrong type.
 */

/** The `head` row of `meta`: the live checkpoint, how many messages it holds, and the id clock to continue from. */
export const Head = z.object({ id: z.string(), step: z.number().int(), count: z.number().int(), clock: z.string() });
export type Head = z.infer<typeof Head>;

/** A row of `checkpoints` (its writes are separate rows). */
export const CheckpointRow = z.object({
  id: z.string(),
  parent_id: z.string().nullable(),
  step: z.number().int(),
  source: Source,
  created_at: z.number().int(),
});
export type CheckpointRow = z.infer<typeof CheckpointRow>;

export const decodeMessage = (json: string): Message => Message.parse(JSON.parse(json));
export const decodeWrite = (json: string): Write => Write.parse(JSON.parse(json));
export const decodeHead = (json: string): Head => Head.parse(JSON.parse(json));

export const toCheckpoint = (r: CheckpointRow, writes: Write[]): Checkpoint => ({ ...r, writes });

const utf8 = new TextEncoder();

/** A message as its `messages` row stores it: the JSON, its size in bytes and its token estimate (kept so reads need not recount). */
export type EncodedMessage = { text: string; bytes: number; tokens: number };

export function encodeMessage(m: Message): EncodedMessage {
  const text = JSON.stringify(m);
  return { text, bytes: utf8.encode(text).length, tokens: estimateTokens(m) };
}
