import { z } from "@hono/zod-openapi";
import { AppError } from "../errors";
import { memoryFor } from "../memory/for-tenant";
import { preloadedSession } from "../memory/session-backend";
import { MemoryScope } from "../memory/scope";
import { resolveScopes } from "../memory/scopes-for";
import { TokenLimitStrategy } from "../memory/token-limit-strategy";
import { estimateTokens } from "../memory/tokens";
import { callModel, streamModel } from "../providers/call";
import { openStreamWithFailover, runWithFailover, type Attempt } from "../providers/failover";
import { StreamAccumulator } from "../providers/stream-accumulator";
import type { ChatMessage, ChatResult, DeltaEvent, FunctionTool } from "../providers/types";
import type { AgentConfig, ModelConfig } from "../routing/model-config";
import { requireAgent, routerFor } from "../routing/registry";
import type { RouteResult } from "../routing/router";
import { ThreadClient, type ThreadRun } from "../thread/client";
import type { Message, MessageInput } from "../thread/message";
import type { UpdateOp } from "../thread/types";
import { collectReducers, middlewareTools, prepareModelRequest, runAfterModel, runBeforeModel, validateRunContext } from "./middleware/compose";
import { middlewaresFromConfig } from "./middleware/registry";
import type { Middleware, Runtime } from "./middleware/types";
import { assemble, tokensOf } from "./prompt";
import { applyUpdate, makeMessage, toThreadOps, type AgentState, type Reducers } from "./state";
import type { Tool } from "./tools/define";
import { toolDefinitions } from "./tools/define";
import { runToolLoop, StepsExhaustedError, type LoopStep, type StepWrite } from "./tools/loop";
import { serverToolsFor } from "./tool-registry";
import { summarizerFor } from "./summarizer";
import { Timings } from "./timings";
import type { TurnInput, TurnResult, TurnUsage } from "./turn";
import { costOf, recordUsage } from "./usage";

/** Model calls one run may make (model → tools → model …). */
export const DEFAULT_MAX_STEPS = 8;

export type RunDeps = { env: Env; waitUntil: (p: Promise<unknown>) => void; fetch?: typeof fetch };

/** Streaming callbacks: `start` once the first upstream event exists, then every content/tool delta. */
export type StreamHooks = {
  start(model: ModelConfig, route: RouteResult): void | Promise<void>;
  delta(event: DeltaEvent): void | Promise<void>;
};

/** Everything decided before the first provider call. Nothing has been written yet. */
type Prepared = {
  input: TurnInput;
  agent?: AgentConfig;
  thread?: ThreadClient;
  /** The thread's lease, held from before its history is read until the run's save (or failure). */
  run?: ThreadRun;
  route: RouteResult;
  /** Client system/developer messages: instructions for this call, never stored. */
  clientSystem: ChatMessage[];
  facts: Message[];
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

const isInstruction = (m: MessageInput) => m.role === "system";

function toChat(m: Pick<MessageInput, "role" | "content" | "name" | "tool_calls" | "tool_call_id">): ChatMessage {
  const c: ChatMessage = { role: m.role, content: m.content ?? null };
  if (m.name !== undefined) c.name = m.name;
  if (m.tool_calls !== undefined) c.tool_calls = m.tool_calls.map((t) => ({ ...t, type: "function" as const }));
  if (m.tool_call_id !== undefined) c.tool_call_id = m.tool_call_id;
  return c;
}

/** The agent's declared context schema (JSON Schema in models.yaml), checked per run. */
function validateAgentContext(agent: AgentConfig | undefined, context: Record<string, unknown>): void {
  if (!agent?.context_schema) return;
  const parsed = z.fromJSONSchema(agent.context_schema).safeParse(context);
  if (!parsed.success) {
    const issues = parsed.error.issues.slice(0, 5).map((i) => `context.${i.path.map(String).join(".")}: ${i.message}`);
    throw new AppError("BEM-083", issues.join("; "));
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

async function prepare(deps: RunDeps, input: TurnInput): Promise<Prepared> {
  const { env } = deps;
  const timings = input.timings ?? new Timings();
  timings.lap("request");
  const { principal } = input;
  if (principal.kind !== "tenant") throw new AppError("BEM-022", "Runs need a tenant key; the operator key manages tenants");
  const agent = input.agentName !== undefined ? requireAgent(input.agentName) : undefined;
  const thread = input.threadId !== undefined ? new ThreadClient(env, principal.tenant, input.threadId, { waitUntil: deps.waitUntil }) : undefined;

  const middlewares = middlewaresFromConfig(agent?.middleware ?? []);
  const agentTools = serverToolsFor(agent);
  const tools = middlewareTools(middlewares, agentTools);
  const reducers = collectReducers(middlewares, tools);
  const context = validateRunContext(middlewares, input.context ?? {});
  validateAgentContext(agent, context);

  const clientSystem = input.messages.filter(isInstruction).map(toChat);
  const toSave = input.messages.filter((m) => !isInstruction(m));
  if (toSave.length === 0) throw new AppError("BEM-011", "messages: at least one non-system message is required");

  // Scopes come from the principal; the client may only narrow them (BEM-023 otherwise).
  const sessionId = thread?.threadId ?? "stateless";
  const session = MemoryScope.session(sessionId);
  let scopes = resolveScopes({ principal, sessionId, agentScopes: agent?.memory_scopes, requested: input.memoryScopes });
  if (!thread) scopes = scopes.filter((s) => !s.equals(session));

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
  timings.lap("route");

  const budget = Math.max(0, route.model.max_tokens - fixedTokens);
  const warnings: string[] = [];
  // Middleware rewrites the stored conversation, so it must see all of it; without
  // middleware the run reads only the newest window that fits (O(kept), not O(history)).
  const needsWholeState = thread !== undefined && (middlewares.length > 0 || input.checkpointId !== undefined);
  // Runs on one thread take turns: the lease is taken before the thread is read and
  // held until the save, so this run sees every turn accepted before it. On a free
  // thread it is the same one round trip that reads the newest window; facts (D1)
  // load meanwhile, since only the thread's turns depend on the lease.
  const leasing = thread?.beginRun(needsWholeState ? {} : { recentTokens: budget });
  leasing?.catch(() => undefined); // awaited below; this only covers a loading failure that comes first
  let facts: Message[];
  let state: AgentState;
  let run: ThreadRun | undefined;
  try {
    if (thread && leasing && needsWholeState) {
      const memory = memoryFor(env, principal.tenant);
      const [loaded, threadState] = await loadingMemory(Promise.all([
        memory.loadContext(
          scopes.filter((s) => !s.equals(session)),
          budget,
        ),
        leasing.then(() => thread.getState(input.checkpointId)),
      ]));
      facts = loaded.messages;
      if (loaded.dropped.facts > 0) warnings.push(`${loaded.dropped.facts} fact(s) did not fit the facts share of ${route.model.name}'s budget`);
      const { messages, ...channels } = threadState.channels;
      state = { ...channels, messages: input.checkpointId !== undefined && middlewares.length === 0 ? new TokenLimitStrategy().apply(messages, Math.max(0, budget - loaded.tokens)) : messages };
    } else {
      const own = thread && leasing
        ? { threadId: thread.threadId, thread: preloadedSession(async () => (await leasing).recent ?? thread.loadRecent(budget), budget, thread) }
        : undefined;
      const memory = memoryFor(env, principal.tenant, own ? { session: own } : {});
      const loaded = await loadingMemory(memory.loadContext(scopes, budget));
      facts = loaded.messages.filter((m) => m.metadata?.fact !== undefined);
      const factSet = new Set(facts);
      state = { messages: loaded.messages.filter((m) => !factSet.has(m)) };
      if (loaded.dropped.facts > 0) warnings.push(`${loaded.dropped.facts} fact(s) did not fit the facts share of ${route.model.name}'s budget`);
    }
    // A client may narrow its scopes so the session is never read; the run still takes its turn.
    run = leasing ? await leasing : undefined;
    timings.lap("memory");

    const runtime: Runtime = {
      model: { name: route.model.name, max_tokens: route.model.max_tokens },
      context,
      agent: { name: agent?.name ?? "default" },
      summarize: summarizerFor(deps, principal),
      now: () => Date.now(),
    };
    const inputMessages = toSave.map((m) =>
      makeMessage(
        {
          role: m.role,
          content: m.content ?? null,
          ...(m.name !== undefined ? { name: m.name } : {}),
          ...(m.tool_calls !== undefined ? { tool_calls: m.tool_calls.map((t) => ({ ...t, type: "function" as const })) } : {}),
          ...(m.tool_call_id !== undefined ? { tool_call_id: m.tool_call_id } : {}),
          ...(m.metadata !== undefined ? { metadata: m.metadata } : {}),
        },
        runtime,
      ),
    );
    return { input, agent, thread, run, route, clientSystem, facts, state, inputMessages, middlewares, tools, agentTools, reducers, runtime, warnings, timings };
  } catch (e) {
    // Whether the lease is granted already or later, it is given back without holding up this answer.
    if (leasing) deps.waitUntil(leasing.then((r) => r.end(), () => undefined));
    throw e;
  }
}

type Call = { result: ChatResult; model: ModelConfig; attempts: Attempt[]; usage: TurnUsage };

function usageOf(messages: ChatMessage[], model: ModelConfig, result: ChatResult): TurnUsage {
  const reported = result.usage;
  const prompt = reported?.prompt_tokens ?? tokensOf(messages);
  const completion = reported?.completion_tokens ?? estimateTokens({ role: "assistant", content: result.message.content, tool_calls: result.message.tool_calls });
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion, cost: costOf(prompt + completion, model.cost_per_1k_tokens), estimated: reported === undefined };
}

function addUsage(a: TurnUsage, b: TurnUsage): TurnUsage {
  return {
    prompt_tokens: a.prompt_tokens + b.prompt_tokens,
    completion_tokens: a.completion_tokens + b.completion_tokens,
    total_tokens: a.total_tokens + b.total_tokens,
    cost: a.cost + b.cost,
    estimated: a.estimated || b.estimated,
  };
}

/** One model call over the routed candidates: failover, and for streams only before the first event. */
async function callRouted(deps: RunDeps, p: Prepared, system: string | null, messages: Message[], serverTools: readonly Tool[], stream?: StreamHooks, first = true): Promise<Call> {
  const clientTools: FunctionTool[] = p.input.params?.tools ?? [];
  const tools = [...toolDefinitions(serverTools), ...clientTools];
  const instructions: ChatMessage[] = system !== null ? [{ role: "system", content: system }, ...p.clientSystem] : p.clientSystem;
  const requestFor = (m: ModelConfig) => {
    const wire = assemble({ instructions, facts: p.facts, turns: messages, input: [] }, m.max_tokens);
    return { ...(p.input.params ?? {}), messages: wire, ...(tools.length > 0 ? { tools } : {}) };
  };
  const ctx = { env: deps.env, fetch: deps.fetch };
  if (!stream) {
    const { value, model, attempts } = await runWithFailover(p.route.candidates, (m) => callModel(m, requestFor(m), ctx));
    return { result: value, model, attempts, usage: usageOf(requestFor(model).messages, model, value) };
  }
  const opened = await openStreamWithFailover(p.route.candidates, (m) => streamModel(m, requestFor(m), ctx));
  if (first) await stream.start(opened.model, p.route);
  const acc = new StreamAccumulator();
  for await (const ev of opened.value) {
    acc.push(ev);
    if (ev.type === "delta") await stream.delta(ev);
  }
  const result = acc.result(opened.model.name);
  return { result, model: opened.model, attempts: opened.attempts, usage: usageOf(requestFor(opened.model).messages, opened.model, result) };
}

/**
 * One agent run: input → (before_model → model → after_model → server tools)* →
 * saved as checkpoints, the first holding the input and the first reply (source
 * "input"), one more per further tool step (source "loop"). A failure before
 * the run completes saves nothing — except BEM-081 (steps exhausted), which
 * saves the complete steps, as the caller asked for them to run.
 */
export async function runTurn(deps: RunDeps, input: TurnInput, stream?: StreamHooks): Promise<TurnResult> {
  const p = await prepare(deps, input);
  try {
    return await runPrepared(deps, p, stream);
  } finally {
    // The save normally ended the run; on any failure this gives the thread to the next run at once.
    await p.run?.end();
  }
}

async function runPrepared(deps: RunDeps, p: Prepared, stream?: StreamHooks): Promise<TurnResult> {
  let usage: TurnUsage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, cost: 0, estimated: false };
  let attempts: Attempt[] = [];
  let model: ModelConfig = p.route.model;
  let last: ChatResult | undefined;
  let calls = 0;
  const events: string[] = [];

  const inputWrite: StepWrite = { source: "input", update: { messages: p.inputMessages } };
  const startState = applyUpdate(p.state, inputWrite.update, p.reducers);
  const clientToolNames = (p.input.params?.tools ?? []).map((t) => t.function.name);

  let loop: { state: AgentState; steps: LoopStep[] };
  try {
    loop = await runToolLoop({
      state: startState,
      tools: p.tools,
      runtime: p.runtime,
      reducers: p.reducers,
      maxSteps: DEFAULT_MAX_STEPS,
      clientTools: clientToolNames,
      callModel: async (state) => {
        const writes: StepWrite[] = [];
        const before = await runBeforeModel(p.middlewares, state, p.runtime, p.reducers);
        for (const u of before.updates) writes.push({ source: u.middleware, update: u.update });
        for (const e of before.events) events.push(`${e.middleware}: ${e.message}`);
        const request = prepareModelRequest(p.middlewares, before.state, p.runtime, { system: p.agent?.system_prompt ?? null, tools: p.agentTools });
        const call = await callRouted(deps, p, request.system, request.messages, request.tools, stream, calls === 0);
        calls++;
        usage = addUsage(usage, call.usage);
        attempts = [...attempts, ...call.attempts];
        model = call.model;
        last = call.result;
        const reply = makeMessage(
          {
            role: "assistant",
            content: call.result.message.content,
            ...(call.result.message.tool_calls ? { tool_calls: call.result.message.tool_calls } : {}),
            metadata: { model: call.model.name, finish_reason: call.result.finish_reason, usage: { prompt_tokens: call.usage.prompt_tokens, completion_tokens: call.usage.completion_tokens } },
          },
          p.runtime,
        );
        const replyWrite: StepWrite = { source: "model", update: { messages: [reply] } };
        writes.push(replyWrite);
        const after = await runAfterModel(p.middlewares, applyUpdate(before.state, replyWrite.update, p.reducers), p.runtime, p.reducers);
        for (const u of after.updates) writes.push({ source: u.middleware, update: u.update });
        for (const e of after.events) events.push(`${e.middleware}: ${e.message}`);
        return { state: after.state, writes };
      },
    });
  } catch (e) {
    if (e instanceof StepsExhaustedError) await save(p, [inputWrite], e.steps, model, attempts);
    throw e;
  }
  p.timings.lap("model");
  const checkpointId = await save(p, [inputWrite], loop.steps, model, attempts);
  p.timings.lap("save");

  const result = last!;
  deps.waitUntil(
    recordUsage(deps.env.DB, p.input.principal.tenant, { model: model.name, prompt_tokens: usage.prompt_tokens, completion_tokens: usage.completion_tokens, cost: usage.cost }).catch((e: unknown) =>
      console.error(JSON.stringify({ level: "error", where: "usage", message: e instanceof Error ? e.message : String(e) })),
    ),
  );
  const lastMessage = loop.state.messages.at(-1);
  const reply = lastMessage?.role === "assistant" ? { role: "assistant" as const, content: lastMessage.content === null ? null : typeof lastMessage.content === "string" ? lastMessage.content : JSON.stringify(lastMessage.content), ...(lastMessage.tool_calls ? { tool_calls: lastMessage.tool_calls } : {}) } : result.message;
  return {
    threadId: p.thread?.threadId ?? null,
    checkpointId,
    reply,
    finishReason: result.finish_reason,
    model,
    route: p.route,
    attempts,
    usage,
    warnings: [...p.warnings, ...events],
    timings: p.timings,
    state: loop.state,
  };
}

/** Writes the run's steps as checkpoints (the first with the input and the routing record). */
async function save(p: Prepared, prefix: StepWrite[], steps: LoopStep[], model: ModelConfig, attempts: Attempt[]): Promise<string | null> {
  if (!p.thread || steps.length === 0) return null;
  const run = p.run;
  if (p.input.checkpointId !== undefined) await p.thread.fork(p.input.checkpointId, { run });
  const saves: { ops: UpdateOp[]; source: "input" | "loop" }[] = [];
  for (const [i, step] of steps.entries()) {
    const writes = i === 0 ? [...prefix, ...step.writes] : step.writes;
    const ops: UpdateOp[] = writes.flatMap((w) => toThreadOps(w.update, p.reducers));
    if (i === 0) {
      ops.push({
        op: "set",
        channel: "last_route",
        reducer: "last_value",
        value: { model: model.name, reason: p.route.reason, candidates: p.route.candidates.map((m) => m.name), attempts, trace: p.route.trace },
      });
    }
    if (ops.length > 0) saves.push({ ops, source: i === 0 ? "input" : "loop" });
  }
  let checkpointId: string | null = null;
  // The last save ends the run in the same event, so the next run starts right on it.
  for (const [i, s] of saves.entries()) {
    checkpointId = (await p.thread.update({ ops: s.ops }, s.source, { run, endRun: i === saves.length - 1 })).id;
  }
  return checkpointId;
}
