import { parseThreadId } from "../thread/thread-id";

/**
 * A stored response's id names its thread — `resp_<32 hex>_<thread id>` — so continuing or
 * reading it goes straight to the thread's object, where the record lives, with no lookup
 * first. The thread part is only an address: the tenant comes from the key, and the thread is
 * checked against the key's grants like any other. Ids of responses not stored (store: false)
 * are `resp_<32 hex>`, as were stored ones before records moved into threads (those are read
 * from D1).
 */
const STORED = /^resp_[0-9a-f]{32}_(.+)$/;

export const responseId = (hex: string, threadId: string | undefined): string => (threadId === undefined ? `resp_${hex}` : `resp_${hex}_${threadId}`);

/**
 * A response's output items are named after it — `msg_<hex>_<thread id>`, `fc_<hex>_<thread id>_<n>` —
 * so an `item_reference` to one (the AI SDK sends them when it resends a stored conversation) finds
 * its response, and so its thread, the same way.
 */
export const itemBase = (hex: string, threadId: string | undefined): string => (threadId === undefined ? hex : `${hex}_${threadId}`);

// A later step's message is `msg_s<step>_…` (responses/convert.ts stepMessageId).
const OUTPUT_ITEM = /^(?:msg_(?:s\d{1,4}_)?([0-9a-f]{32})_(.+)|fc_([0-9a-f]{32})_(.+)_\d+)$/;

/** The stored response (and its thread) an output item id names, or null. */
export function responseOfItem(itemId: string): { responseId: string; threadId: string } | null {
  const m = OUTPUT_ITEM.exec(itemId);
  const hex = m?.[1] ?? m?.[3];
  const thread = m?.[2] ?? m?.[4];
  if (hex === undefined || thread === undefined) return null;
  const threadId = threadOfResponse(`resp_${hex}_${thread}`);
  return threadId === null ? null : { responseId: responseId(hex, threadId), threadId };
}

/** The thread a response id names, or null for an id that names none (an older one, or not ours). */
export function threadOfResponse(id: string): string | null {
  const thread = STORED.exec(id)?.[1];
  if (thread === undefined) return null;
  try {
    return parseThreadId(thread);
  } catch {
    return null;
  }
}

const CALL_ITEM = /^fc_([0-9a-f]{32})_(.+)_(\d{1,4})$/;

/** The stored response, thread and call index a stored function call's id (its aliased call_id) names, or null. */
export function callOfItem(id: string): { responseId: string; threadId: string; index: number } | null {
  const m = CALL_ITEM.exec(id);
  if (!m) return null;
  const threadId = threadOfResponse(`resp_${m[1]}_${m[2]}`);
  return threadId === null ? null : { responseId: responseId(m[1]!, threadId), threadId, index: Number(m[3]) };
}
