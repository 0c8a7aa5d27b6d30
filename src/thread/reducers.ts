import { AppError } from "../core/errors";
import type { Message } from "../core/message";
import type { Reducer, Write } from "./types";

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** Checks a value is acceptable for a reducer before anything is written. */
export function checkReducerValue(channel: string, reducer: Reducer, value: unknown): void {
  if (value === undefined) throw new AppError("BEM-035", `Channel '${channel}': value is required`);
  if (reducer === "append" && !Array.isArray(value)) {
    throw new AppError("BEM-035", `Channel '${channel}' appends: value must be a list of items`);
  }
  if (reducer === "merge" && !isPlainObject(value)) {
    throw new AppError("BEM-035", `Channel '${channel}' merges: value must be an object`);
  }
}

/** The channel's value after one write. `current` is undefined before the first write. */
export function reduce(reducer: Reducer, current: unknown, value: unknown): unknown {
  switch (reducer) {
    case "last_value":
      return value;
    case "append":
      return [...(Array.isArray(current) ? current : []), ...(Array.isArray(value) ? value : [value])];
    case "merge":
      return { ...(isPlainObject(current) ? current : {}), ...(isPlainObject(value) ? value : {}) };
  }
}

/** Thread state held in memory: replaying checkpoint writes into it reconstructs any checkpoint. */
export type ReplayState = {
  messages: Map<string, Message>; // insertion order = message order; set() on an existing key keeps position
  channels: Map<string, { reducer: Reducer; value: unknown }>;
};

export const emptyReplayState = (): ReplayState => ({ messages: new Map(), channels: new Map() });

export function applyWrite(state: ReplayState, w: Write): void {
  switch (w.op) {
    case "put":
      state.messages.set(w.message.id, w.message);
      return;
    case "remove":
      state.messages.delete(w.id);
      return;
    case "remove_all":
      state.messages.clear();
      return;
    case "set": {
      const current = state.channels.get(w.channel)?.value;
      state.channels.set(w.channel, { reducer: w.reducer, value: reduce(w.reducer, current, w.value) });
      return;
    }
  }
}
