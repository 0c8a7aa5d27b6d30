import type { z } from "@hono/zod-openapi";
import type { Principal } from "../../auth/principal";
import type { Message } from "../../thread/message";
import type { AgentState, Reducers, StateUpdate } from "../state";
import type { Tool } from "../tools/define";

/** What a hook sees besides the state. Built by the pipeline once per run. */
export type Runtime = {
  model: { name: string; max_tokens: number };
  /** The per-run context, already validated against the middleware context schemas. */
  context: Readonly<Record<string, unknown>>;
  agent: { name: string };
  /** Calls a routed cheap model (or the one named) to summarize; injected by the pipeline. */
  summarize?: (messages: Message[], opts: { model?: string }) => Promise<string>;
  now: () => number;
  /** Id source for new messages; crypto.randomUUID when absent. */
  newId?: () => string;
  /** Who runs this turn, for tools that act with the caller's grants (memory tools). Never shown to the model. */
  caller?: ToolCaller;
};

declare global {
  // The worker's bindings (worker-configuration.d.ts). Declared here too, empty, so the
  // build-time scripts that import this file type-check without the worker types.
  interface Env {}
}

/** The calling key and the run's memory layers, injected by the pipeline. */
export type ToolCaller = { env: Env; principal: Principal; threadId?: string; scopes: readonly string[] };

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
  /** Channels this middleware owns, with their reducers. */
  stateSchema?: Reducers;
  /** Fields the per-run context must carry for this middleware (bad context → BEM-083). */
  contextSchema?: z.ZodType<Record<string, unknown>>;
  /** Server tools this middleware installs. */
  tools?: Tool[];
  beforeModel?: Hook;
  afterModel?: Hook;
  /** Adjusts one model call without touching stored state (e.g. the system prompt). */
  modelRequest?: (request: ModelRequest, state: AgentState, runtime: Runtime) => ModelRequest | void;
};
