import { overwrite } from "../state";
import { repairToolPairs } from "./tool-pairs";
import type { Middleware } from "./types";

/**
 * Custom middleware example (see README.md here): drops tool results marked
 * `metadata.ephemeral === true` before the model call, then repairs tool pairs
 * so the assistant message that asked for them stays valid.
 */
export const filterToolNoise: Middleware = {
  name: "filter_tool_noise",
  rewritesHistory: true, // it overwrites the stored messages
  beforeModel(state) {
    const filtered = state.messages.filter((m) => !(m.role === "tool" && m.metadata?.ephemeral === true));
    if (filtered.length === state.messages.length) return;
    return { messages: overwrite(repairToolPairs(filtered)) };
  },
};
