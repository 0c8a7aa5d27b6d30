import { AppError } from "../errors";
import { memoryFor } from "../memory/for-tenant";
import { MemoryScope } from "../memory/scope";
import { resolveScopes } from "../memory/scopes-for";
import { TokenLimitStrategy } from "../memory/token-limit-strategy";
import { estimateTokens } from "../memory/tokens";
import { callModel, streamModel } from "../providers/call";
import { openStreamWithFailover, runWithFailover, type Attempt } from "../providers/failover";
import { StreamAccumulator } from "../providers/stream-accumulator";
import type { ChatMessage, ChatRequest, ChatResult, StreamEvent } from "../providers/types";
import type { AgentConfig, ModelConfig } from "../routing/model-config";
import { requireAgent } from "../routing/registry";
import { routerFor } from "../routing/registry";
import type { RouteResult } from "../routing/router";
import { ThreadClient } from "../thread/client";
import type { Message, MessageInput } from "../thread/message";
import { assemble, type PromptParts, tokensOf } from "./prompt";
import type { TurnInput, TurnResult, TurnUsage } from "./turn";
import { Timings } from "./timings";
import { costOf, recordUsage } from "./usage";

/** Everything decided before the first provider call. Nothing has been written yet. */
type Prepared = {
  input: TurnInput;
  agent?: AgentConfig;
  thread?: ThreadClient;
  route: RouteResult;
  parts: PromptParts;
  /** The client's non-system messages: saved with the reply. */
  toSave: MessageInput[];
  warnings: string[];
  timings: Timings;
};

const isInstruction = (m: MessageInput) => m.role === "system" || (m.role as string) === "developer";

function toChat(m: MessageInput): ChatMessage {
  const c: ChatMessage = { role: m.role, content: m.content ?? null };
  if (m.name !== undefined) c.name = m.name;
  if (m.tool_calls !== undefined) c.tool_calls = m.tool_calls.map((t) => ({ ...t, type: "function" as const }));
  if (m.tool_call_id !== undefined) c.tool_call_id = m.tool_call_id;
  return c;
}

async function prepare(env: Env, input: TurnInput): Promise<Prepared> {
  const timings = new Timings();
  const { principal } = input;
  if (principal.kind !== "tenant") throw new AppError("BEM-022", "Runs need a tenant key; the operator key manages tenants");
  const agent = input.agentName !== undefined ? requireAgent(input.agentName) : undefined;
  const thread = input.threadId !== undefined ? new ThreadClient(env, principal.tenant, input.threadId) : undefined;

  const instructions: ChatMessage[] = [];
  if (agent?.system_prompt) instructions.push({ role: "system", content: agent.system_prompt });
  for (const m of input.messages.filter(isInstruction)) instructions.push({ ...toChat(m), role: "system" });
  const toSave = input.messages.filter((m) => !isInstruction(m));
  const newInput = toSave.map(toChat);
  if (newInput.length === 0) throw new AppError("BEM-011", "messages: at least one non-system message is required");

  // Scopes come from the principal; the client may only narrow them (BEM-023 otherwise).
  const sessionId = thread?.threadId ?? "stateless";
  let scopes = resolveScopes({ principal, sessionId, agentScopes: agent?.memory_scopes, requested: input.memoryScopes });
  if (!thread) scopes = scopes.filter((s) => !s.equals(MemoryScope.session(sessionId)));

  const lastUser = [...newInput].reverse().find((m) => m.role === "user");
  const fixedTokens = tokensOf(instructions) + tokensOf(newInput);
  const route = routerFor(env).resolve({
    content: lastUser?.content ?? null,
    messages: [...instructions.map((m) => ({ ...m, role: "system" as const })), ...toSave],
    metadata: input.capabilities ? { capabilities: input.capabilities } : undefined,
    agent,
    model_override: input.model && input.model !== "auto" ? input.model : undefined,
    min_context_tokens: fixedTokens,
  });

  timings.lap("route");
  const budget = Math.max(0, route.model.max_tokens - fixedTokens);
  const memory = memoryFor(env, principal.tenant);
  const warnings: string[] = [];
  let facts: Message[];
  let turns: Message[];
  if (thread && input.checkpointId !== undefined) {
    // Time travel: the history is the checkpoint's, not the head's.
    const session = MemoryScope.session(thread.threadId);
    const loaded = await memory.loadContext(scopes.filter((s) => !s.equals(session)), budget);
    facts = loaded.messages;
    const state = await thread.getState(input.checkpointId);
    const used = loaded.tokens;
    turns = new TokenLimitStrategy().apply(state.channels.messages, Math.max(0, budget - used));
  } else {
    const loaded = await memory.loadContext(scopes, budget);
    facts = loaded.messages.filter((m) => m.metadata?.fact !== undefined);
    const factSet = new Set(facts);
    turns = loaded.messages.filter((m) => !factSet.has(m));
    if (loaded.dropped.facts > 0) warnings.push(`${loaded.dropped.facts} fact(s) did not fit the facts share of ${route.model.name}'s budget`);
  }
  timings.lap("memory");
  return { input, agent, thread, route, parts: { instructions, facts, turns, input: newInput }, toSave, warnings, timings };
}

function requestFor(p: Prepared, model: ModelConfig): ChatRequest {
  return { ...(p.input.params ?? {}), messages: assemble(p.parts, model.max_tokens) };
}

function usageOf(p: Prepared, model: ModelConfig, result: ChatResult): TurnUsage {
  const reported = result.usage;
  const prompt = reported?.prompt_tokens ?? tokensOf(requestFor(p, model).messages);
  const completion = reported?.completion_tokens ?? estimateTokens({ role: "assistant", content: result.message.content, tool_calls: result.message.tool_calls });
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    cost: costOf(prompt + completion, model.cost_per_1k_tokens),
    estimated: reported === undefined,
  };
}

/** Saves input + reply as ONE checkpoint, then records usage. Only called once a reply exists. */
async function finish(env: Env, p: Prepared, model: ModelConfig, result: ChatResult, attempts: Attempt[], waitUntil: (x: Promise<unknown>) => void): Promise<TurnResult> {
  p.timings.lap("model");
  const usage = usageOf(p, model, result);
  let checkpointId: string | null = null;
  if (p.thread) {
    if (p.input.checkpointId !== undefined) await p.thread.fork(p.input.checkpointId);
    const reply: MessageInput = {
      role: "assistant",
      content: result.message.content,
      metadata: { model: model.name, finish_reason: result.finish_reason, usage: { prompt_tokens: usage.prompt_tokens, completion_tokens: usage.completion_tokens } },
    };
    if (result.message.tool_calls) reply.tool_calls = result.message.tool_calls;
    const cp = await p.thread.update(
      {
        ops: [
          { op: "append", messages: [...p.toSave, reply] },
          {
            op: "set",
            channel: "last_route",
            reducer: "last_value",
            value: { model: model.name, reason: p.route.reason, candidates: p.route.candidates.map((m) => m.name), attempts, trace: p.route.trace },
          },
        ],
      },
      "input",
    );
    checkpointId = cp.id;
    p.timings.lap("save");
  }
  waitUntil(
    recordUsage(env.DB, p.input.principal.tenant, { model: model.name, prompt_tokens: usage.prompt_tokens, completion_tokens: usage.completion_tokens, cost: usage.cost }).catch((e: unknown) =>
      console.error(JSON.stringify({ level: "error", where: "usage", message: e instanceof Error ? e.message : String(e) })),
    ),
  );
  return {
    threadId: p.thread?.threadId ?? null,
    checkpointId,
    reply: result.message,
    finishReason: result.finish_reason,
    model,
    route: p.route,
    attempts,
    usage,
    warnings: p.warnings,
    timings: p.timings,
  };
}

export type RunDeps = { env: Env; waitUntil: (p: Promise<unknown>) => void; fetch?: typeof fetch };

/** A whole turn, not streamed. A failure before the reply leaves the thread untouched. */
export async function runTurn(deps: RunDeps, input: TurnInput): Promise<TurnResult> {
  const p = await prepare(deps.env, input);
  const ctx = { env: deps.env, fetch: deps.fetch };
  const { value, model, attempts } = await runWithFailover(p.route.candidates, (m) => callModel(m, requestFor(p, m), ctx));
  return finish(deps.env, p, model, value, attempts, deps.waitUntil);
}

export type OpenedTurn = {
  model: ModelConfig;
  route: RouteResult;
  attempts: Attempt[];
  /** Deltas as they arrive; a cut stream throws BEM-074 here. */
  deltas: AsyncGenerator<Extract<StreamEvent, { type: "delta" }>>;
  /** After `deltas` is drained: saves the turn and returns its result. */
  finish(): Promise<TurnResult>;
};

/**
 * A streamed turn, opened: failover happens only before the first event, so any
 * error up to here is a plain coded error. Afterwards a cut stream throws from
 * `deltas` and nothing is saved; a complete one is saved by `finish()`, whether
 * or not the client is still listening.
 */
export async function openTurn(deps: RunDeps, input: TurnInput): Promise<OpenedTurn> {
  const p = await prepare(deps.env, input);
  const ctx = { env: deps.env, fetch: deps.fetch };
  const opened = await openStreamWithFailover(p.route.candidates, (m) => streamModel(m, requestFor(p, m), ctx));
  const acc = new StreamAccumulator();
  async function* deltas() {
    for await (const ev of opened.value) {
      acc.push(ev);
      if (ev.type === "delta") yield ev;
    }
  }
  return {
    model: opened.model,
    route: p.route,
    attempts: opened.attempts,
    deltas: deltas(),
    finish: () => finish(deps.env, p, opened.model, acc.result(opened.model.name), opened.attempts, deps.waitUntil),
  };
}
