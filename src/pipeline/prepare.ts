import { untruncated } from "./truncation";
import { z } from "@hono/zod-openapi";
import { authorizeThread } from "../auth/policy";
import { AppError } from "../core/errors";
import { memoryFor } from "../memory/for-tenant";
import type { SessionThread } from "../memory/session-backend";
import { MemoryScope } from "../memory/scope";
import type { MemoryReport } from "../memory/report";
import type { LoadedContext, RankOptions } from "../memory/types";
import { TokenLimitStrategy } from "../memory/token-limit-strategy";
import type { ChatMessage, DeltaEvent } from "../providers/types";
import type { AgentConfig, ModelConfig } from "../config/model-config";
import { requireAgent, routerFor } from "../routing/bundled";
import type { RouteResult } from "../routing/router";
import { DEFAULT_RECALL } from "../memory/recall-excerpts";
import { recallConfigOf, recallQuery, wholeStateView, windowTokens } from "./run-recall";
import { messageText, type Message, type MessageInput, type ParsedMessageInput } from "../core/message";
import type { RecallAsk, UpdateSource } from "../thread/types";
import { collectReducers, middlewareTools, validateTurnContext } from "./middleware/compose";
import { middlewaresFromConfig } from "./middleware/from-config";
import type { Middleware } from "./middleware/types";
import type { Runtime } from "./runtime";
import { toChat, tokensOf } from "./prompt";
import { makeMessage, type AgentState, type Reducers } from "./state";
import type { Tool } from "./tools/define";
import { serverToolsFor } from "./server-tools";
import { summarizerFor } from "./summarizer";
import type { SpendGuard } from "./spend-guard";
import { embedForRun } from "./run-embed";
import { Timings } from "./timings";
import type { TurnInput } from "./turn";
import { describeIssues } from "../core/zod-issues";
import { checkToolAnswers } from "../thread/tool-answers";
import type { Admission } from "./admit";
import type { TurnIO } from "./turn-io";
import { inSpan, contentOf, type SpanParent } from "../core/trace";
import type { HeldThread } from "./held-thread";

export type TurnDeps = {
  env: Env;
  waitUntil: (p: Promise<unknown>) => void;
  fetch?: typeof fetch;
  /** Cancels the run (its provider calls stop; nothing of it is saved): the LangGraph API's cancel. */
  signal?: AbortSignal;
  /** The run's D1 traffic: facts through one session, bookkeeping batched after the answer. */
  io: TurnIO;
  /**
   * The run's thread, present exactly when the turn is stateful: a stateful turn runs only
   * inside its thread's object (turn-in-object.ts), which holds the thread's lease for it.
   */
  thread?: HeldThread;
  /** Where the run's spans start (the agent span while it runs); none when the deployment does not trace. */
  trace?: SpanParent;
};

/** Streaming callbacks: `start` once the first upstream event exists, then every content/tool delta. */
export type StreamHooks = {
  start(model: ModelConfig, route: Pick<RouteResult, "reason">): void | Promise<void>;
  delta(event: DeltaEvent): void | Promise<void>;
};

/** What a run does, decided before anything is read: who asks what, of which agent, on which thread and model, with which middleware and tools. */
export type TurnPlan = {
  input: TurnInput;
  agent?: AgentConfig;
  /** The run's thread, inside its object (present exactly when the turn is stateful). */
  thread?: HeldThread;
  route: RouteResult;
  /** The memory scopes this run loads (`name` or `name:id`), recorded with its routing. */
  scopes: string[];
  /** Client system/developer messages: instructions for this call, never stored. */
  clientSystem: ChatMessage[];
  /** The client's new non-system messages, with ids. */
  inputMessages: Message[];
  middlewares: Middleware[];
  /** Every server tool: the agent's and those its middleware install. */
  tools: Tool[];
  /** The agent's own server tools (middleware add theirs when the request is prepared). */
  agentTools: Tool[];
  reducers: Reducers;
  runtime: Runtime;
  timings: Timings;
};

/** What the run was given to work with, loaded under its lease: the facts, and the thread's state. Nothing has been written yet. */
export type TurnContext = {
  facts: Message[];
  /** Which facts loaded and why, and which earlier turns recall brought (the response's `memory`). */
  memory: MemoryReport;
  /**
   * A run holding the whole state (middleware, a branch): the model's view of its messages —
   * the newest window and recalled earlier turns within the turn budget (run-recall.ts).
   */
  view?: (messages: Message[]) => Message[];
  /** The thread's messages (the budget window, or all of them when middleware needs the whole state) + channels. */
  state: AgentState;
  warnings: string[];
};

/** Everything decided and loaded before the first provider call. */
export type Prepared = { plan: TurnPlan; context: TurnContext };

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
function readingThread<T>(read: () => T): T {
  try {
    return read();
  } catch (e) {
    if (e instanceof AppError) throw e;
    throw new AppError("BEM-098", undefined, { internal: e instanceof Error ? `${e.name}: ${e.message}` : String(e) });
  }
}

/** The agent, thread, middleware and tools a run uses, checked before anything is read or written. */
function planTurn(deps: TurnDeps, input: TurnInput) {
  const agent = input.agentName !== undefined ? requireAgent(input.agentName) : undefined;
  const thread = deps.thread;
  const middlewares = middlewaresFromConfig(agent?.middleware ?? []);
  // Every rewrite the turn plans is decided by now (checkpoint_id, a resend that branches or empties the head, a
  // previous_response_id behind the head, middleware that replaces messages): the one check, before anything is read.
  if (thread && (input.checkpointId !== undefined || input.fromEmpty === true || middlewares.some((m) => m.rewritesHistory === true)))
    authorizeThread(input.principal, thread.threadId, true);
  const agentTools = serverToolsFor(agent);
  const tools = middlewareTools(middlewares, agentTools);
  const reducers = collectReducers(middlewares, tools);
  const context = validateTurnContext(middlewares, input.context ?? {});
  validateAgentContext(agent, context);
  return { agent, thread, middlewares, agentTools, tools, reducers, context };
}

/** The client's messages: system/developer ones are this call's instructions; the rest are the turn (at least one). */
function splitInput(messages: readonly ParsedMessageInput[], resuming: boolean): { clientSystem: ChatMessage[]; toSave: ParsedMessageInput[] } {
  const clientSystem = messages.filter(isInstruction).map(toChat);
  const toSave = messages.filter((m) => !isInstruction(m));
  // A resumed run's input is the person's decisions (TurnInput.resume), not messages.
  if (toSave.length === 0 && !resuming) throw new AppError("BEM-011", "messages: at least one non-system message is required");
  return { clientSystem, toSave };
}

/** Routes on what is certain to be sent (system + new input); the rest of the model's window is the memory budget. */
function routeTurn(env: Env, input: TurnInput, agent: AgentConfig | undefined, clientSystem: ChatMessage[], toSave: ParsedMessageInput[]) {
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

type Loaded = TurnContext;

/** The run's facts and what its response reports about them (and a warning when some did not fit). */
function factsOf(loaded: LoadedContext, model: ModelConfig): Omit<Loaded, "state"> {
  const dropped = loaded.dropped.facts;
  return {
    facts: loaded.facts,
    memory: { facts: loaded.report, dropped_facts: dropped, ...(loaded.recalled.length > 0 ? { recalled: loaded.recalled } : {}) },
    warnings: [...loaded.warnings, ...(dropped > 0 ? [`${dropped} fact(s) did not fit the facts share of ${model.name}'s budget`] : [])],
  };
}

/**
 * Facts (D1) and the thread's turns. Middleware rewrites the stored conversation, so it (and
 * a fork) gets the whole thread state; otherwise the session is the last memory layer and only
 * its newest window that fits is read (O(kept), not O(history); the thread log's tail cache
 * usually holds it decoded).
 */
async function loadMemory(
  deps: TurnDeps,
  input: TurnInput,
  run: { wholeState: boolean; middlewares: Middleware[] },
  scopes: MemoryScope[],
  budget: number,
  model: ModelConfig,
  rank: RankOptions,
): Promise<Loaded> {
  const { env, thread, io } = deps;
  const facts = io.facts;
  if (thread && run.wholeState) {
    // The turns are the state read below; this run's session layer brings its facts only (an empty window),
    // so they load as on every other path, and the object does not call itself for a window it has.
    const noWindow = sessionOf(thread, async () => ({ messages: [], tokens: 0, truncated: false }));
    const memory = memoryFor(env, input.principal.tenant, { facts, factsCache: io.factsCache, session: noWindow });
    // Each failure keeps its own cause: D1 memory → BEM-065, the thread's storage → BEM-098 (or its own code).
    const read = readingThread(() => thread.log.state(input.checkpointId));
    // A run from an empty thread (reconcile.ts) keeps the channels and none of the messages, as its save will.
    const threadState = input.fromEmpty ? { ...read, channels: { ...read.channels, messages: [] } } : read;
    const loaded = await loadingMemory(memory.loadContext(scopes, budget, rank));
    const { messages, ...channels } = threadState.channels;
    const forked = (input.checkpointId !== undefined || input.fromEmpty === true) && run.middlewares.length === 0;
    const room = Math.min(Math.max(0, budget - loaded.tokens.facts), rank.turnTokens ?? Number.MAX_SAFE_INTEGER);
    const out = factsOf(loaded, model);
    // The model sees the newest window and the turns recalled from this (possibly replayed) state.
    const view =
      rank.recall === false
        ? undefined
        : wholeStateView(thread, { ...(rank.recall ?? DEFAULT_RECALL), query: rank.recallQuery ?? rank.query ?? "" }, room, out.memory);
    if (forked) {
      const kept = view ? view(messages) : new TokenLimitStrategy().apply(messages, room);
      if (!view && kept.length < messages.length) untruncated(input, model);
      return { ...out, state: { ...channels, messages: kept } };
    }
    return { ...out, state: { ...channels, messages }, ...(view ? { view } : {}) };
  }
  // The window is the thread's storage too: a failure reading it is BEM-098, not long-term memory's BEM-065.
  const own = thread
    ? sessionOf(thread, async (maxTokens: number, opts: { recall?: RecallAsk } = {}) => readingThread(() => thread.log.recent(maxTokens, opts)))
    : undefined;
  const memory = memoryFor(env, input.principal.tenant, { facts, factsCache: io.factsCache, ...(own ? { session: own } : {}) });
  const loaded = await loadingMemory(memory.loadContext(scopes, budget, rank));
  if (loaded.dropped.turns) untruncated(input, model);
  return { ...factsOf(loaded, model), state: { messages: loaded.turns } };
}

/** The run's own thread as its session layer: the window `loadRecent` reads, and appends through the run's room. */
const sessionOf = (thread: HeldThread, loadRecent: SessionThread["loadRecent"]) => ({
  threadId: thread.threadId,
  thread: {
    loadRecent,
    appendMessages: (messages: MessageInput[], source: UpdateSource) => thread.write({ ops: [{ op: "append", messages }] }, source),
  },
});

/** The client's new messages as stored messages: ids are the runtime's, never the client's. */
const toStored = (toSave: ParsedMessageInput[], runtime: Runtime): Message[] => toSave.map(({ id: _clientId, ...m }) => makeMessage(m, runtime));

/** What middleware, tools and the summarizer see of the run. */
function runtimeFor(
  deps: TurnDeps,
  principal: TurnInput["principal"],
  run: { route: RouteResult; agent?: AgentConfig; context: Record<string, unknown>; thread?: HeldThread; scopes: MemoryScope[]; guard?: SpendGuard },
): Runtime {
  const { route, agent, thread } = run;
  return {
    model: { name: route.model.name, max_tokens: route.model.max_tokens },
    context: run.context,
    agent: { name: agent?.name ?? "default" },
    summarize: summarizerFor(deps, principal, "summarization", thread?.threadId),
    now: () => Date.now(),
    ...(deps.trace ? { trace: deps.trace } : {}),
    caller: {
      env: deps.env,
      principal,
      ...(thread ? { threadId: thread.threadId } : {}),
      scopes: run.scopes.map(String),
      facts: () => deps.io.writer(),
      ...(deps.io.factsCache ? { factsWritten: deps.io.factsCache.clear } : {}),
      ...(run.guard ? { budget: run.guard } : {}),
    },
  };
}

/** Everything before the first provider call, in order: plan, route, take the thread's turn and load memory, build the runtime. `guard` holds a remote embedder's calls against the turn's budgets. */
export async function prepare(deps: TurnDeps, input: TurnInput, admission: Admission, guard?: SpendGuard): Promise<Prepared> {
  const { env } = deps;
  const timings = input.timings ?? new Timings();
  timings.lap("request");
  const { principal } = input;
  const { context, ...plan } = planTurn(deps, input);
  const { agent, thread, middlewares } = plan;
  const { clientSystem, toSave } = splitInput(input.messages, input.resume !== undefined);
  // Every layer, the agent's or the client's, was checked against the caller's grants when the turn was admitted (admit.ts).
  const scopes = admission.scopes.map((s) => MemoryScope.parse(s));
  const { route, lastUser, budget } = routeTurn(env, input, agent, clientSystem, toSave);
  timings.lap("route");

  // Middleware that only bounds the model's view (trim) needs no more than the window.
  const wholeState = thread !== undefined && (middlewares.some((m) => !m.viewOnly) || input.checkpointId !== undefined || input.fromEmpty === true);
  const turnTokens = windowTokens(middlewares);
  // When a scope's facts do not fit, those relevant to this input load first (after the agent's always-kinds);
  // when the session does not, earlier turns relevant to it are recalled. An input with no search word of its
  // own ("and then?") borrows the newest turns' words for both: facts about what was just said, not the newest facts.
  const text = lastUser ? messageText(lastUser.content) : "";
  const recall = recallConfigOf(agent);
  const lent = recallQuery(text, thread);
  const asked: RankOptions = {
    query: lent,
    alwaysKinds: agent?.always_kinds ?? [],
    recall: recall === false ? false : recall,
    recallQuery: recall === false ? text : lent,
    ...(turnTokens !== undefined ? { turnTokens } : {}),
    // The agent's channels rank its facts as they rank its turns.
    ...(recall !== false && recall.channels ? { channels: recall.channels } : {}),
  };
  // A remote embedder's query vectors, fetched before the recall that reads them (failing: words alone, with a warning).
  const { rank, warning: denseOff } = await embedForRun(deps, { tenant: principal.tenant, agent, rank: asked, facts: scopes.length > 0, guard });
  // The facts of the run's scopes and its thread's recalled earlier turns, as one memory search (docs/operations/tracing.md).
  const searched = {
    "gen_ai.operation.name": "search_memory",
    "gen_ai.memory.store.id": "edgeweave.context",
    "gen_ai.memory.query.text": contentOf(deps.trace, () => text),
  };
  const loaded = await inSpan(deps.trace, "search_memory", "internal", searched, async (span) => {
    const l = await loadMemory(deps, input, { wholeState, middlewares }, scopes, budget, route.model, rank);
    const facts = l.memory.facts.filter((f) => f.loaded).length;
    const recalled = l.memory.recalled?.length ?? 0;
    span?.set({
      "gen_ai.memory.record.count": facts + recalled,
      "edgeweave.memory.facts": facts,
      "edgeweave.memory.recalled": recalled,
      "edgeweave.memory.scopes": scopes.map(String),
    });
    return l;
  });
  if (denseOff !== undefined && !loaded.warnings.includes(denseOff)) loaded.warnings.unshift(denseOff);
  if (route.warning !== undefined) loaded.warnings.unshift(route.warning);
  // Before any model call: a tool result must answer a call the stored conversation (or this input) left open.
  checkToolAnswers(loaded.state.messages, toSave);
  timings.lap("memory");

  const runtime = runtimeFor(deps, principal, { route, agent, context, thread, scopes, ...(guard ? { guard } : {}) });
  return {
    plan: { input, ...plan, route, scopes: scopes.map(String), clientSystem, inputMessages: toStored(toSave, runtime), runtime, timings },
    context: loaded,
  };
}
