import { AppError } from "../../core/errors";
import { applyUpdate, type AgentState, type Reducer, type Reducers, type StateUpdate } from "../state";
import type { Tool } from "../tools/define";
import type { Runtime } from "../runtime";
import { HookOutcome, type Middleware, type MiddlewareEvent, type ModelRequest } from "./types";
import { describeIssues } from "../../core/zod-issues";

export type HookName = "before_model" | "after_model";

/** One hook's update, in the order applied; the pipeline checkpoints each. */
export type RecordedUpdate = { middleware: string; hook: HookName; update: StateUpdate };
export type RecordedEvent = MiddlewareEvent & { middleware: string; hook: HookName };
export type HookRun = { state: AgentState; updates: RecordedUpdate[]; events: RecordedEvent[] };

/**
 * The reducers of every channel the middleware and tools declare. Two
 * declarations of one channel with different reducers is a configuration error.
 */
export function collectReducers(middlewares: readonly Middleware[], tools: readonly Tool[] = []): Record<string, Reducer> {
  const out: Record<string, Reducer> = {};
  const owner: Record<string, string> = {};
  const declare = (who: string, schema: Reducers | undefined) => {
    for (const [channel, reducer] of Object.entries(schema ?? {})) {
      if (channel === "messages") throw new AppError("BEM-084", `${who} may not redeclare the messages channel`);
      const prev = out[channel];
      if (prev !== undefined && prev !== reducer) {
        throw new AppError("BEM-084", `Channel '${channel}' is declared ${prev} by ${owner[channel]} and ${reducer} by ${who}`);
      }
      out[channel] = reducer;
      owner[channel] = who;
    }
  };
  for (const m of middlewares) {
    declare(`middleware '${m.name}'`, m.stateSchema);
    for (const t of m.tools ?? []) declare(`tool '${t.name}'`, t.stateSchema);
  }
  for (const t of tools) declare(`tool '${t.name}'`, t.stateSchema);
  return out;
}

async function runHooks(hook: HookName, middlewares: readonly Middleware[], state: AgentState, runtime: Runtime, reducers: Reducers): Promise<HookRun> {
  const updates: RecordedUpdate[] = [];
  const events: RecordedEvent[] = [];
  for (const m of middlewares) {
    const fn = hook === "before_model" ? m.beforeModel : m.afterModel;
    if (!fn) continue;
    const result = await fn(state, runtime);
    const update = result instanceof HookOutcome ? result.update : (result ?? undefined);
    if (result instanceof HookOutcome) for (const e of result.events) events.push({ ...e, middleware: m.name, hook });
    if (!update || Object.keys(update).length === 0) continue;
    state = applyUpdate(state, update, reducers);
    updates.push({ middleware: m.name, hook, update });
  }
  return { state, updates, events };
}

/** Runs before_model hooks in list order; each sees the state left by the previous one. */
export function runBeforeModel(middlewares: readonly Middleware[], state: AgentState, runtime: Runtime, reducers?: Reducers) {
  return runHooks("before_model", middlewares, state, runtime, reducers ?? collectReducers(middlewares));
}

/** Runs after_model hooks in reverse list order (the outermost middleware sees the reply last). */
export function runAfterModel(middlewares: readonly Middleware[], state: AgentState, runtime: Runtime, reducers?: Reducers) {
  return runHooks("after_model", [...middlewares].reverse(), state, runtime, reducers ?? collectReducers(middlewares));
}

/** Every tool the middleware install, followed by the agent's own. Duplicate names → BEM-084. */
export function middlewareTools(middlewares: readonly Middleware[], tools: readonly Tool[] = []): Tool[] {
  const all = [...middlewares.flatMap((m) => m.tools ?? []), ...tools];
  const names = new Set<string>();
  for (const t of all) {
    if (names.has(t.name)) throw new AppError("BEM-084", `Two tools are named '${t.name}'`);
    names.add(t.name);
  }
  return all;
}

/** The request for one model call: stored messages, the system prompt and tools, as middleware adjust them. */
export function prepareModelRequest(
  middlewares: readonly Middleware[],
  state: AgentState,
  runtime: Runtime,
  base: { system: string | null; tools?: readonly Tool[] },
): ModelRequest {
  let request: ModelRequest = { system: base.system, messages: state.messages, tools: middlewareTools(middlewares, base.tools) };
  for (const m of middlewares) request = m.modelRequest?.(request, state, runtime) ?? request;
  return request;
}

/** Validates the per-run context (a record the request schema parsed) against every middleware's context schema (BEM-083 on failure). */
export function validateTurnContext(middlewares: readonly Middleware[], context: Record<string, unknown>): Record<string, unknown> {
  const problems: string[] = [];
  for (const m of middlewares) {
    if (!m.contextSchema) continue;
    const parsed = m.contextSchema.safeParse(context);
    if (!parsed.success) problems.push(describeIssues(parsed.error.issues, { prefix: "context.", suffix: ` (needed by ${m.name})`, input: context }));
  }
  if (problems.length) throw new AppError("BEM-083", problems.join("; "));
  return context;
}
