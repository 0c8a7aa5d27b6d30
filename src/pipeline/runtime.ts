import type { Message } from "../core/message";
import type { Principal } from "../core/principal";
import type { SpanParent } from "../core/trace";
import type { EmbedHolder } from "../embed/embed-cache";

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
  /** Where a tool's spans start (the agent span; a tool's own work nests under its execute_tool span). */
  trace?: SpanParent;
  /** Who runs this turn, for tools that act with the caller's grants (memory tools). Never shown to the model. */
  caller?: ToolCaller;
};

declare global {
  // The worker's bindings (worker-configuration.d.ts) and D1's session type (workers-types). Declared
  // here too, empty, so the build-time scripts that import this file type-check without the worker types.
  interface Env {}
  interface D1DatabaseSession {}
}

/** The calling key and the run's memory layers, injected by the pipeline. */
export type ToolCaller = {
  env: Env;
  principal: Principal;
  threadId?: string;
  scopes: readonly string[];
  /**
   * Where memory tools read and write facts: the primary, through a session of the run's (TurnIO.writer),
   * so the bookmark the thread keeps after the run is past their writes and its next turn reads them on any replica.
   */
  facts?: () => D1DatabaseSession;
  /** A tool wrote or deleted facts: the thread object's facts cache must not serve what it read before (memory/facts-cache.ts). */
  factsWritten?: () => void;
  /** The run's budgets: a memory tool's search by meaning holds its embedder call against them. */
  budget?: EmbedHolder;
};
