import { z } from "@hono/zod-openapi";
import { assertThreadRoom } from "../auth/quotas";
import { AppError } from "../core/errors";
import { factsSession } from "../memory/bookmark";
import { memoryFor } from "../memory/for-tenant";
import { preloadedSession } from "../memory/session-backend";
import { MemoryScope } from "../memory/scope";
import { authorize, authorizeThread, resolveScopes } from "../auth/policy";
import type { MemoryReport } from "../memory/report";
import type { LoadedContext, RankOptions } from "../memory/types";
import { TokenLimitStrategy } from "../memory/token-limit-strategy";
import type { ChatMessage, DeltaEvent } from "../providers/types";
import type { AgentConfig, ModelConfig } from "../config/model-config";
import { requireAgent, routerFor } from "../routing/bundled";
import type { RouteResult } from "../routing/router";
import { type Bookkeeping, ThreadClient, type ThreadEndpoint, type ThreadRun } from "../thread/client";
import { messageText, type Message, type ParsedMessageInput } from "../core/message";
import { collectReducers, middlewareTools, validateRunContext } from "./middleware/compose";
import { middlewaresFromConfig } from "./middleware/from-config";
import type { Middleware } from "./middleware/types";
import type { Runtime } from "./runtime";
import { toChat, tokensOf } from "./prompt";
import { makeMessage, type AgentState, type Reducers } from "./state";
import type { Tool } from "./tools/define";
import { serverToolsFor } from "./server-tools";
import { summarizerFor } from "./summarizer";
import { Timings } from "./timings";
import type { TurnInput } from "./turn";
import { describeIssues } from "../core/zod-issues";
import { checkToolAnswers } from "../thread/tool-answers";

export type RunDeps = {
  env: Env;
  waitUntil: (p: Promise<unknown>) => void;
  fetch?: typeof fetch;
  /** Set when the run executes inside its thread's own object: thread calls are local, not RPC. */
  local?: ThreadEndpoint;
  /** The D1 session facts are read through (memory/bookmark.ts); one from the input's bookmark when absent. */
  facts?: D1DatabaseSession;
  /**
   * The thread's lease, taken by its object before the run was planned, so that what the run
   * continues from (reconciliation, previous_response_id) was decided against the head it extends.
   */
  held?: ThreadRun;
  /** Set in the thread's object: the run's D1 writes after the answer (usage, thread list) go there, to be sent as one batch. */
  bookkeeping?: Bookkeeping;
};

/** Streaming callbacks: `start` once the first upstream event exists, then every content/tool delta. */
export type StreamHooks = {
  start(model: ModelConfig, route: Pick<RouteResult, "reason">): void | Promise<void>;
  delta(event: DeltaEvent): void | Promise<void>;
};

/** Everything decided before the first provider call. Nothing has been written yet. */
export type Prepared = {
  input: TurnInput;
  agent?: AgentConfig;
  thread?: ThreadClient;
  /** The thread's lease, held from before its history is read until the run's save (or failure). */
  run?: ThreadRun;
  route: RouteResult;
  /** The memory scopes this run loads (`name` or `name:id`), recorded with its routing. */
  scopes: string[];
  /** Client system/developer messages: instructions for this call, never stored. */
  clientSystem: ChatMessage[];
  facts: Message[];
  /** Which facts loaded and why (the response's `memory`). */
  memory: MemoryReport;
  /** The thread's messages (the budget window, or all of them when middleware needs the whole state) + channels. */
  state: AgentState;
  /** The client's new non-system messages, with ids. */
  inputMessages: Message[];
  middlewares: Middleware[];
  /** Every server tool: the agent's and those its middleware install. */
  tools: Tool[];
  /** The agent's own server tools (middleware add theirs when the request is prepared). */
  agentTools: Tool[];
  reducers: Reducers;
  runtime: Runtime;
  warnings: string[];
  timings: Timings;
};

const isInstruction = (m: ParsedMessageInput) => m.role === "system";

/** The agent's declared context schema (JSON Schema in models.yaml), checked per run. */
function validateAgentContext(agent: AgentConfig | undefined, context: Record<string, unknown>): void {
  if (!agent?.context_schema) return;
  const parsed = z.fromJSONSchema(agent.context_schema).safeParse(context);
  if (!parsed.success) {
    throw new AppError("BEM-083", describeIssues(parsed.error.issues, { prefix: "context." }));
  }
}

/** A storage failure while loading memory is a coded 503 before anything runs, never a bare 500. */
async function loadingMemory<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (e) {
    if (e instanceof AppError) throw e;
    throw new AppError("BEM-065", undefined, { internal: e instanceof Error ? e.message : String(e) });
  }
}

/** A thread read that fails without a code is the thread's storage failing, not long-term memory. */
async function readingThread<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (e) {
    if (e instanceof AppError) throw e;
    throw new AppError("BEM-098", undefined, { internal: e instanceof Error ? `${e.name}: ${e.message}` : String(e) });
  }
}

/** The agent, thread, middleware and tools a run uses, checked before anything is read or written. */
function planRun(deps: RunDeps, input: TurnInput) {
  const { principal } = input;
  const agent = input.agentName !== undefined ? requireAgent(input.agentName) : undefined;
  const thread =
    input.threadId !== undefined
      ? new ThreadClient(deps.env, principal.tenant, input.threadId, { waitUntil: deps.waitUntil, local: deps.local, bookkeeping: deps.bookkeeping })
      : undefined;
  const middlewares = middlewaresFromConfig(agent?.middleware ?? []);
  // Before anything is read or written: the thread must be reachable, and a run that
  // rewrites its stored history (a fork, or middleware that replaces or removes messages)
  // needs the same right as POST …/state and /fork.
  if (thread) authorizeThread(principal, thread.threadId, input.checkpointId !== undefined || middlewares.some((m) => m.rewritesHistory === true));
  const agentTools = serverToolsFor(agent);
  const tools = middlewareTools(middlewares, agentTools);
  const reducers = collectReducers(middlewares, tools);
  const context = validateRunContext(middlewares, input.context ?? {});
  validateAgentContext(agent, context);
  return { agent, thread, middlewares, agentTools, tools, reducers, context };
}

/** The client's messages: system/developer ones are this call's instructions; the rest are the turn (at least one). */
function splitInput(messages: readonly ParsedMessageInput[]): { clientSystem: ChatMessage[]; toSave: ParsedMessageInput[] } {
  const clientSystem = messages.filter(isInstruction).map(toChat);
  const toSave = messages.filter((m) => !isInstruction(m));
  if (toSave.length === 0) throw new AppError("BEM-011", "messages: at least one non-system message is required");
  return { clientSystem, toSave };
}

/** Routes on what is certain to be sent (system + new input); the rest of the model's window is the memory budget. */
function routeRun(env: Env, input: TurnInput, agent: AgentConfig | undefined, clientSystem: ChatMessage[], toSave: ParsedMessageInput[]) {
  const system: ChatMessage[] = agent?.system_prompt ? [{ role: "system", content: agent.system_prompt }, ...clientSystem] : clientSystem;
  const newInput = toSave.map(toChat);
  const lastUser = [...newInput].reverse().find((m) => m.role === "user");
  const fixedTokens = tokensOf(system) + tokensOf(newInput);
  const route = routerFor(env).resolve({
    content: lastUser?.content ?? null,
    messages: [...system.map((m) => ({ ...m, role: "system" as const })), ...toSave],
    metadata: input.capabilities ? { capabilities: input.capabilities } : undefined,
    agent,
    model_override: input.model && input.model !== "auto" ? input.model : undefined,
    min_context_tokens: fixedTokens,
  });
  return { route, lastUser, budget: Math.max(0, route.model.max_tokens - fixedTokens) };
}

type Loaded = { facts: Message[]; memory: MemoryReport; state: AgentState; warnings: string[] };

/** The run's facts and what its response reports about them (and a warning when some did not fit). */
function factsOf(loaded: LoadedContext, model: ModelConfig): Omit<Loaded, "state"> {
  const dropped = loaded.dropped.facts;
  return {
    facts: loaded.facts,
    memory: { facts: loaded.report, dropped_facts: dropped },
    warnings: dropped > 0 ? [`${dropped} fact(s) did not fit the facts share of ${model.name}'s budget`] : [],
  };
}

/**
 * Facts (D1) and the thread's turns, loaded together. Middleware rewrites the stored
 * conversation, so it (and a fork) gets the whole thread state; otherwise the session is
 * the last memory layer and only its newest window that fits is read (O(kept), not O(history)).
 */
async function loadMemory(
  deps: RunDeps,
  input: TurnInput,
  run: { thread?: ThreadClient; leasing?: Promise<ThreadRun>; wholeState: boolean; middlewares: Middleware[] },
  scopes: MemoryScope[],
  budget: number,
  model: ModelConfig,
  rank: RankOptions,
): Promise<Loaded> {
  const { env } = deps;
  const { thread, leasing } = run;
  const facts = deps.facts ?? factsSession(env.DB, input.bookmark);
  if (thread && leasing && run.wholeState) {
    const session = MemoryScope.session(thread.threadId);
    const memory = memoryFor(env, input.principal.tenant, { facts });
    // Each failure keeps its own cause: D1 memory → BEM-065, the thread's storage → BEM-098 (or its own code).
    // Only sessions hold turns, so without this run's session the load is facts alone.
    const [loaded, threadState] = await Promise.all([
      loadingMemory(
        memory.loadContext(
          scopes.filter((s) => !s.equals(session)),
          budget,
          rank,
        ),
      ),
      readingThread(leasing.then(() => thread.getState(input.checkpointId))),
    ]);
    const { messages, ...channels } = threadState.channels;
    const forked = input.checkpointId !== undefined && run.middlewares.length === 0;
    const room = Math.max(0, budget - loaded.tokens.facts);
    return { ...factsOf(loaded, model), state: { ...channels, messages: forked ? new TokenLimitStrategy().apply(messages, room) : messages } };
  }
  // The window is the thread's storage too: a failure reading it is BEM-098, not long-term memory's BEM-065.
  const own =
    thread && leasing
      ? {
          threadId: thread.threadId,
          thread: preloadedSession(() => readingThread(leasing.then((r) => r.recent ?? thread.loadRecent(budget))), budget, {
            loadRecent: (maxTokens) => readingThread(thread.loadRecent(maxTokens)),
            appendMessages: (messages, source) => thread.appendMessages(messages, source),
          }),
        }
      : undefined;
  const memory = memoryFor(env, input.principal.tenant, { facts, ...(own ? { session: own } : {}) });
  const loaded = await loadingMemory(memory.loadContext(scopes, budget, rank));
  return { ...factsOf(loaded, model), state: { messages: loaded.turns } };
}

/** The client's new messages as stored messages: ids are the runtime's, never the client's. */
const toStored = (toSave: ParsedMessageInput[], runtime: Runtime): Message[] => toSave.map(({ id: _clientId, ...m }) => makeMessage(m, runtime));

/**
 * Runs on one thread take turns: the lease is taken before the thread is read and held
 * until the save, so this run sees every turn accepted before it. On a free thread it is
 * the same one round trip that reads the newest window (unless the whole state is read).
 */
function takeTurn(thread: ThreadClient | undefined, wholeState: boolean, budget: number, held?: ThreadRun): Promise<ThreadRun> | undefined {
  if (thread && held) return Promise.resolve(held);
  const leasing = thread?.beginRun(wholeState ? {} : { recentTokens: budget });
  leasing?.catch(() => undefined); // awaited by the caller; this only covers a loading failure that comes first
  return leasing;
}

/** After a failure before the run: the lease, granted already or later, is given back without holding up the answer. */
function giveBack(deps: RunDeps, leasing: Promise<ThreadRun> | undefined): void {
  if (!leasing) return;
  deps.waitUntil(
    leasing.then(
      (r) => r.end(),
      () => undefined,
    ),
  );
}

/** What middleware, tools and the summarizer see of the run. */
function runtimeFor(
  deps: RunDeps,
  principal: TurnInput["principal"],
  run: { route: RouteResult; agent?: AgentConfig; context: Record<string, unknown>; thread?: ThreadClient; scopes: MemoryScope[] },
): Runtime {
  const { route, agent, thread } = run;
  return {
    model: { name: route.model.name, max_tokens: route.model.max_tokens },
    context: run.context,
    agent: { name: agent?.name ?? "default" },
    summarize: summarizerFor(deps, principal, "summarization"),
    now: () => Date.now(),
    caller: { env: deps.env, principal, ...(thread ? { threadId: thread.threadId } : {}), scopes: run.scopes.map(String) },
  };
}

/** Everything before the first provider call, in order: plan, route, take the thread's turn and load memory, build the runtime. */
export async function prepare(deps: RunDeps, input: TurnInput): Promise<Prepared> {
  const { env } = deps;
  const timings = input.timings ?? new Timings();
  timings.lap("request");
  const { principal } = input;
  authorize(principal, "run");
  const { context, ...plan } = planRun(deps, input);
  const { agent, thread, middlewares } = plan;
  const { clientSystem, toSave } = splitInput(input.messages);
  // A run on a thread the tenant does not have yet creates it: within the thread quota, before anything is read or written.
  // (A run inside the thread's object was checked by the Worker before it was handed over: run-in-object.ts.)
  if (thread && !deps.local) await assertThreadRoom(env, principal.tenant, thread.threadId);
  // Every layer, the agent's or the client's, must be within the caller's grants (BEM-023 otherwise).
  const scopes = resolveScopes({ principal, sessionId: thread?.threadId, agentScopes: agent?.memory_scopes, requested: input.memoryScopes });
  const { route, lastUser, budget } = routeRun(env, input, agent, clientSystem, toSave);
  timings.lap("route");

  const wholeState = thread !== undefined && (middlewares.length > 0 || input.checkpointId !== undefined);
  // Facts (D1) load while the lease is taken: only the thread's turns depend on it.
  const leasing = takeTurn(thread, wholeState, budget, deps.held);
  // When a scope's facts do not fit, those relevant to this input load first (after the agent's always-kinds).
  const rank = { query: lastUser ? messageText(lastUser.content) : "", alwaysKinds: agent?.always_kinds ?? [] };
  try {
    const loaded = await loadMemory(deps, input, { thread, leasing, wholeState, middlewares }, scopes, budget, route.model, rank);
    // A client may narrow its scopes so the session is never read; the run still takes its turn.
    const run = leasing ? await leasing : undefined;
    // Before any model call: a tool result must answer a call the stored conversation (or this input) left open.
    checkToolAnswers(loaded.state.messages, toSave);
    timings.lap("memory");

    const runtime = runtimeFor(deps, principal, { route, agent, context, thread, scopes });
    return { input, ...plan, run, route, scopes: scopes.map(String), clientSystem, ...loaded, inputMessages: toStored(toSave, runtime), runtime, timings };
  } catch (e) {
    giveBack(deps, leasing);
    throw e;
  }
}
