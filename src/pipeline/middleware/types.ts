import type { z } from "@hono/zod-openapi";
import type { Message } from "../../core/message";
import type { AgentState, Reducers, StateUpdate } from "../state";
import type { Runtime } from "../runtime";
import type { Tool } from "../tools/define";

/** Something worth logging that is not a state change (e.g. a failed summary). */
export type MiddlewareEvent = { level: "info" | "warn"; type: string; message: string };

/** A hook result carrying events as well as (optionally) an update. */
export class HookOutcome {
  constructor(
    readonly update: StateUpdate | undefined,
    readonly events: readonly MiddlewareEvent[],
  ) {}
}

export type HookResult = void | undefined | StateUpdate | HookOutcome;
export type Hook = (state: AgentState, runtime: Runtime) => HookResult | Promise<HookResult>;

/**
 * What the model is called with. `system` is the agent's system prompt for this
 * call only (rendered as the first message); it is not stored in the thread.
 */
export type ModelRequest = { system: string | null; messages: Message[]; tools: Tool[] };

export type Middleware = {
  name: string;
  /**
   * True when its hooks may remove or replace stored messages (not only append): running it
   * on a thread needs the right to rewrite that thread's history (src/auth/policy.ts).
   */
  rewritesHistory?: boolean;
  /**
   * Set by a middleware that only bounds the model's view of the turns (trim without persist):
   * a run whose middleware are all such reads the newest window within this many tokens, with
   * recall, instead of the whole thread.
   */
  windowTokens?: number;
  /** Only shapes the model's view (modelRequest), never reads or writes the stored history: the run needs only the window. */
  viewOnly?: boolean;
  /** Channels this middleware owns, with their reducers. */
  stateSchema?: Reducers;
  /** Fields the per-run context must carry for this middleware (bad context → BEM-083). */
  contextSchema?: z.ZodType<Record<string, unknown>>;
  /** Server tools whose calls stop the run unexecuted, for a person's decision on the next run (human_in_the_loop). */
  approvalTools?: readonly string[];
  /** Server tools this middleware installs. */
  tools?: Tool[];
  beforeModel?: Hook;
  afterModel?: Hook;
  /** Adjusts one model call without touching stored state (e.g. the system prompt). */
  modelRequest?: (request: ModelRequest, state: AgentState, runtime: Runtime) => ModelRequest | void;
};
