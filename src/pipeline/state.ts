import { z } from "@hono/zod-openapi";
import { AppError } from "../core/errors";
import { Message } from "../core/message";
import { checkReducerValue, reduce } from "../thread/reducers";
import { isReservedChannel, Reducer, type UpdateOp } from "../thread/types";

/**
 * The in-run state model: what middleware and tools read and write during one
 * agent run. It mirrors the thread Durable Object exactly (same reducers, same
 * message semantics), so an update computed here can be persisted as one
 * checkpoint with `toThreadOps` and replays to the same state.
 */

export { Reducer };
/** Channel name → reducer. Channels not listed behave as last_value, as in the DO. */
export type Reducers = Readonly<Record<string, Reducer>>;

/** Thread state during a run: the messages channel plus any other channels. */
export type AgentState = { messages: Message[] } & { [channel: string]: unknown };

export const RemoveMessage = z.object({ op: z.literal("remove"), id: z.string().min(1) });
export type RemoveMessage = z.infer<typeof RemoveMessage>;
export const RemoveAllMessages = z.object({ op: z.literal("remove_all") });
export type RemoveAllMessages = z.infer<typeof RemoveAllMessages>;
export const OverwriteMessages = z.object({ op: z.literal("overwrite"), messages: z.array(Message) });
export type OverwriteMessages = z.infer<typeof OverwriteMessages>;

/** A plain message appends, or replaces in place when its id already exists. */
export const MessageOp = z.union([RemoveMessage, RemoveAllMessages, Message]);
export type MessageOp = z.infer<typeof MessageOp>;
export const MessageUpdate = z.union([OverwriteMessages, z.array(MessageOp)]);
export type MessageUpdate = z.infer<typeof MessageUpdate>;

/** What a hook or a tool Command returns: message ops and channel writes. */
export type StateUpdate = { messages?: MessageUpdate } & { [channel: string]: unknown };

export const overwrite = (messages: readonly Message[]): OverwriteMessages => ({ op: "overwrite", messages: [...messages] });
export const remove = (id: string): RemoveMessage => ({ op: "remove", id });
export const removeAll = (): RemoveAllMessages => ({ op: "remove_all" });

export const isOverwrite = (u: MessageUpdate | undefined): u is OverwriteMessages => u !== undefined && !Array.isArray(u) && u.op === "overwrite";

const isOp = (op: MessageOp): op is RemoveMessage | RemoveAllMessages => "op" in op;

/** The message ops of an update as a flat list (an overwrite is remove_all then the messages). */
export function messageOps(update: MessageUpdate): MessageOp[] {
  return isOverwrite(update) ? [removeAll(), ...update.messages] : update;
}

/** Applies message ops as the DO does: add or replace by id, remove (unknown id → BEM-031), remove all. */
export function applyMessageUpdate(current: readonly Message[], update: MessageUpdate): Message[] {
  const ops = messageOps(update);
  if (ops.length <= FEW_MESSAGES && !ops.some(isOp)) return upsertFew(current, ops as Message[]);
  let out: (Message | null)[] = [...current];
  const position = new Map<string, number>();
  for (const [i, m] of out.entries()) if (m) position.set(m.id, i);
  for (const op of ops) {
    if (!isOp(op)) {
      const at = position.get(op.id);
      if (at === undefined) {
        position.set(op.id, out.length);
        out.push(op);
      } else out[at] = op;
    } else if (op.op === "remove_all") {
      out = [];
      position.clear();
    } else {
      const at = position.get(op.id);
      if (at === undefined) throw new AppError("BEM-031", `No message with id '${op.id}' in this thread`);
      out[at] = null;
      position.delete(op.id);
    }
  }
  return out.filter((m): m is Message => m !== null);
}

/** Up to this many plain messages are looked up where they stand rather than through an index of every id. */
const FEW_MESSAGES = 8;

/**
 * A turn's update: a message or two added to a window of hundreds. Looking each id up from the newest end
 * costs a few comparisons per message, where indexing every id of the window cost a map entry each, twice a turn.
 */
function upsertFew(current: readonly Message[], messages: readonly Message[]): Message[] {
  const out = [...current];
  for (const m of messages) {
    let at = out.length - 1;
    while (at >= 0 && out[at]!.id !== m.id) at--;
    if (at < 0) out.push(m);
    else out[at] = m;
  }
  return out;
}

function channelEntries(update: StateUpdate): [string, unknown][] {
  const entries = Object.entries(update).filter(([k, v]) => k !== "messages" && v !== undefined);
  const reserved = entries.find(([k]) => isReservedChannel(k));
  if (reserved) throw new AppError("BEM-035", `'${reserved[0]}' is reserved, not a channel name`);
  return entries;
}

/** A copy without a prototype, so writing any channel name is a plain own property. */
const plainCopy = <T extends object>(o: T): T => Object.assign(Object.create(null) as T, o);

/** Applies one update to an in-memory state, exactly as the DO would persist it. Never mutates `state`. */
export function applyUpdate(state: AgentState, update: StateUpdate, reducers: Reducers = {}): AgentState {
  const next: AgentState = plainCopy(state);
  if (update.messages !== undefined) next.messages = applyMessageUpdate(state.messages, update.messages);
  for (const [channel, value] of channelEntries(update)) {
    const reducer = reducers[channel] ?? "last_value";
    checkReducerValue(channel, reducer, value);
    next[channel] = reduce(reducer, state[channel], value);
  }
  return next;
}

const sameValue = (a: unknown, b: unknown): boolean => a === b || JSON.stringify(a) === JSON.stringify(b);

/**
 * Merges updates produced in parallel within one step (e.g. parallel tool calls)
 * into one update, in the given order. Two different writes to a last_value
 * channel, or two message overwrites (or an overwrite next to other message ops),
 * have no meaningful order: that is BEM-082.
 */
export function mergeStepUpdates(updates: readonly StateUpdate[], reducers: Reducers = {}): StateUpdate {
  const merged: StateUpdate = plainCopy({});
  const ops: MessageOp[] = [];
  let replaced: OverwriteMessages | undefined;
  let messageWriters = 0;
  for (const update of updates) {
    if (update.messages !== undefined) {
      messageWriters++;
      if (isOverwrite(update.messages)) {
        if (replaced) throw new AppError("BEM-082", "Two parallel updates overwrite the messages channel in one step");
        replaced = update.messages;
      } else ops.push(...update.messages);
    }
    for (const [channel, value] of channelEntries(update)) {
      const reducer = reducers[channel] ?? "last_value";
      checkReducerValue(channel, reducer, value);
      if (!(channel in merged)) merged[channel] = value;
      else if (reducer === "last_value") {
        if (!sameValue(merged[channel], value)) {
          throw new AppError("BEM-082", `Conflicting writes to channel '${channel}' in one step; give it an append or merge reducer`);
        }
      } else merged[channel] = reduce(reducer, merged[channel], value);
    }
  }
  if (replaced && messageWriters > 1) {
    throw new AppError("BEM-082", "A messages overwrite and other message writes happened in one step");
  }
  if (replaced) merged.messages = replaced;
  else if (messageWriters > 0) merged.messages = ops;
  return merged;
}

/** Applies a step's parallel updates: merged through the reducers, conflicts → BEM-082. */
export function applyStep(state: AgentState, updates: readonly StateUpdate[], reducers: Reducers = {}) {
  const update = mergeStepUpdates(updates, reducers);
  return { state: applyUpdate(state, update, reducers), update };
}

/**
 * The DO operations that persist `update` as one checkpoint. A plain message is
 * an `append` (the DO replaces in place when the id exists), an overwrite is
 * `remove_all` then `append`.
 */
export function toThreadOps(update: StateUpdate, reducers: Reducers = {}): UpdateOp[] {
  const out: UpdateOp[] = [];
  let pending: Message[] = [];
  const flush = () => {
    // The DO takes at most 1000 messages per append op.
    for (let i = 0; i < pending.length; i += 1000) out.push({ op: "append", messages: pending.slice(i, i + 1000) });
    pending = [];
  };
  if (update.messages !== undefined) {
    for (const op of messageOps(update.messages)) {
      if (!isOp(op)) {
        pending.push(op);
        continue;
      }
      flush();
      out.push(op.op === "remove" ? { op: "remove", id: op.id } : { op: "remove_all" });
    }
    flush();
  }
  for (const [channel, value] of channelEntries(update)) {
    out.push({ op: "set", channel, value, reducer: reducers[channel] ?? "last_value" });
  }
  return out;
}

/** A new message with a fresh id and timestamp. */
export function makeMessage(draft: Omit<Message, "id" | "created_at"> & { id?: string }, clock: { now: () => number; newId?: () => string }): Message {
  return { ...draft, id: draft.id ?? clock.newId?.() ?? crypto.randomUUID(), created_at: clock.now() };
}

/** True when two message lists hold the same message objects in the same order (no change to write). */
export function sameMessages(a: readonly Message[], b: readonly Message[]): boolean {
  return a.length === b.length && a.every((m, i) => m === b[i]);
}
