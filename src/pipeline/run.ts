import type { Attempt } from "../providers/failover";
import { isAnthropicShaped, replyOfParts } from "../providers/anthropic-blocks";
import type { ChatResult } from "../providers/types";
import type { Message } from "../core/message";
import type { ModelConfig } from "../config/model-config";
import { prepareModelRequest, runAfterModel, runBeforeModel } from "./middleware/compose";
import { applyUpdate, makeMessage, type AgentState } from "./state";
import { runToolLoop, StepsExhaustedError, type LoopStep, type StepWrite } from "./tools/loop";
import type { TurnInput, TurnResult } from "./turn";
import { prepare, type Prepared, type TurnDeps, type StreamHooks } from "./prepare";
import { callRouted, droppedWarning, outputLimitWarning } from "./model-call";
import { addUsage, type TurnUsage } from "./usage";
import type { Admission } from "./admit";
import { type SaveTurn, saveTurn } from "./save-turn";
import type { HeldThread } from "./held-thread";
import { approvalToolsOf, resumeWrites } from "./resume";
import { scheduleExtraction } from "../queue/messages";
import { extractionWarning } from "./extraction-check";
import { errorText, log } from "../core/log";
import { inSpan } from "../core/trace";
import { agentEnd, agentStart, tracedCall } from "./spans";
import { type SpendGuard, spendGuard } from "./spend-guard";

export type { TurnDeps, StreamHooks } from "./prepare";

/** Model calls one run may make (model → tools → model …). */
export const DEFAULT_MAX_STEPS = 8;

/**
 * One agent run: input → (before_model → model → after_model → server tools)* →
 * saved as checkpoints, the first holding the input and the first reply (source
 * "input"), one more per further tool step (source "loop"). A failure before
 * the run completes saves nothing — except BEM-081 (steps exhausted), which
 * saves the complete steps, as the caller asked for them to run.
 */
export async function runTurn(deps: TurnDeps, turn: { input: TurnInput; admission: Admission }, stream?: StreamHooks): Promise<TurnResult> {
  // Which budgets apply is read while the turn prepares (its thread, its facts).
  const budget = spendGuard(deps.env, turn.input.principal, turn.input.threadId, deps.waitUntil, turn.input.params?.user, turn.input.budgetTags);
  const agent = agentStart(deps.trace, turn.input);
  return inSpan(deps.trace, agent.name, "internal", agent.attrs, async (span) => {
    const traced = span ? { ...deps, trace: span } : deps;
    const r = await runPrepared(traced, await prepare(traced, turn.input, turn.admission, budget), budget, stream);
    if (span) agentEnd(span, r);
    return r;
  });
}

async function runPrepared(deps: TurnDeps, { plan: p, context }: Prepared, budget: SpendGuard, stream?: StreamHooks): Promise<TurnResult> {
  let usage: TurnUsage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, cost: 0, estimated: false };
  let attempts: Attempt[] = [];
  let model: ModelConfig = p.route.model;
  let last: ChatResult | undefined;
  let calls = 0;
  const texts: string[] = [];
  /** Calls whose tokens were estimated (the provider reported none: a cut stream, a provider without usage). */
  let estimatedCalls = 0;
  const events: string[] = [];

  const inputWrite: StepWrite = { source: "input", update: { messages: p.inputMessages } };
  // A resumed run starts with the person's decisions on the calls the last run stopped at (pipeline/resume.ts).
  const resumed = p.input.resume ? await resumeWrites(p, context.state, p.input.resume.decisions) : undefined;
  const prefix = resumed?.writes ?? [inputWrite];
  const startState = resumed?.state ?? applyUpdate(context.state, inputWrite.update, p.reducers);
  // Calls to the client's tools and to tools that wait for a person's approval end the run unexecuted.
  const clientToolNames = [...(p.input.params?.tools ?? []).map((t) => t.function.name), ...approvalToolsOf(p.middlewares)];

  let loop: { state: AgentState; steps: LoopStep[] };
  // The run's steps as its thread's checkpoints (the first with the input and the routing record).
  const saving = (thread: HeldThread, steps: LoopStep[]): SaveTurn => ({
    thread,
    principal: p.input.principal,
    ...(p.input.checkpointId !== undefined ? { branchFrom: p.input.checkpointId } : {}),
    ...(p.input.fromEmpty ? { fromEmpty: true } : {}),
    reducers: p.reducers,
    record: { model, route: p.route, attempts, scopes: p.scopes, memory: context.memory },
    prefix,
    steps,
  });
  // Every model call the provider answered, in part or whole, is billed, whether or not the run then completes (e.g. steps exhausted, a cut stream).
  const bill = () => {
    if (calls === 0) return;
    const cause = p.input.cause ?? "turn";
    const record = {
      model: model.name,
      cause,
      requests: calls,
      estimated_requests: estimatedCalls,
      prompt_tokens: usage.prompt_tokens,
      completion_tokens: usage.completion_tokens,
      cost: usage.cost,
    };
    deps.io.bill(p.input.principal.tenant, record);
  };
  try {
    loop = await runToolLoop({
      state: startState,
      tools: p.tools,
      runtime: p.runtime,
      reducers: p.reducers,
      maxSteps: DEFAULT_MAX_STEPS,
      clientTools: clientToolNames,
      ...(p.input.maxToolCalls !== undefined ? { maxToolCalls: p.input.maxToolCalls } : {}),
      callModel: async (state) => {
        const writes: StepWrite[] = [];
        const before = await runBeforeModel(p.middlewares, state, p.runtime, p.reducers);
        for (const u of before.updates) writes.push({ source: u.middleware, update: u.update });
        for (const e of before.events) events.push(`${e.middleware}: ${e.message}`);
        const request = prepareModelRequest(p.middlewares, before.state, p.runtime, { system: p.agent?.system_prompt ?? null, tools: p.agentTools });
        const count = (c: { model: ModelConfig; usage: TurnUsage }) => {
          calls++;
          if (c.usage.estimated) estimatedCalls++;
          usage = addUsage(usage, c.usage);
          model = c.model;
        };
        const call = await tracedCall(
          deps.trace,
          {
            deps,
            plan: p,
            facts: context.facts,
            system: request.system,
            // A run holding the whole state sends the model its window and the recalled earlier turns.
            messages: context.view ? context.view(request.messages) : request.messages,
            serverTools: request.tools,
            ...(stream ? { stream } : {}),
            first: calls === 0,
            step: texts.length,
            onCut: count,
            budget,
          },
          callRouted,
        );
        count(call);
        texts.push(call.result.message.content ?? "");
        attempts = [...attempts, ...call.attempts];
        last = call.result;
        const reply = makeMessage(
          {
            role: "assistant",
            content: withThinking(call.result.message),
            ...(call.result.message.tool_calls ? { tool_calls: call.result.message.tool_calls } : {}),
            metadata: {
              model: call.model.name,
              finish_reason: call.result.finish_reason,
              usage: { prompt_tokens: call.usage.prompt_tokens, completion_tokens: call.usage.completion_tokens },
            },
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
    bill();
    if (e instanceof StepsExhaustedError && p.thread) await saveTurn(saving(p.thread, e.steps));
    throw e;
  }
  bill();
  p.timings.lap("model");
  const result = last!;
  const lastMessage = loop.state.messages.at(-1);
  const reply = lastMessage?.role === "assistant" ? replyOf(lastMessage) : result.message;
  const outcome = {
    threadId: p.thread?.threadId ?? null,
    reply,
    finishReason: result.finish_reason,
    ...(result.stop_reason ? { stop: { reason: result.stop_reason, sequence: result.stop_sequence ?? null } } : {}),
    model,
    route: p.route,
    attempts,
    usage,
    // Each earlier step's text (the steps whose calls the agent's own tools answered): the answer shows every step.
    stepTexts: texts.slice(0, -1),
    warnings: [
      ...context.warnings,
      ...outputLimitWarning(model, p.input.params?.max_output_tokens),
      ...droppedWarning(model, p.input),
      ...events,
      ...[extractionWarning(deps.env, { agent: p.agent, principal: p.input.principal, threadId: p.thread?.threadId })].filter((w) => w !== undefined),
    ],
    memory: context.memory,
  };
  // What the turn keeps beside its last checkpoint (a Responses record) is written in that save's transaction.
  const keep = p.thread?.keep;
  let kept: Record<string, unknown> | undefined;
  const checkpointId = p.thread
    ? await saveTurn({ ...saving(p.thread, loop.steps), ...(keep ? { alongside: (cp) => void (kept = keep({ ...outcome, checkpointId: cp.id })) } : {}) })
    : null;
  p.timings.lap("save");

  // Background fact extraction (agents with `extract:`); a failure to queue never fails the saved turn.
  deps.waitUntil(
    scheduleExtraction(deps.env, { agent: p.agent, principal: p.input.principal, threadId: p.thread?.threadId, checkpointId }).catch((e: unknown) =>
      log.error("extract", { message: errorText(e) }),
    ),
  );
  return { ...outcome, checkpointId, timings: p.timings, state: loop.state, ...(kept ? { response: kept } : {}) };
}

type Reply = ChatResult["message"];

/**
 * A reply with Anthropic thinking is stored as its thinking blocks, then its text (the order Anthropic wants
 * them back in); one whose plain fields cannot say it all (server-tool blocks, text after a call) as its parts.
 */
function withThinking(m: Reply): Message["content"] {
  if (m.parts) return m.parts;
  if (!m.thinking?.length) return m.content;
  return [...m.thinking, ...(m.content ? [{ type: "text" as const, text: m.content }] : [])];
}

/** The stored last assistant message as the run's reply: thinking blocks apart from the text, its parts when it was stored so. */
function replyOf(m: Message): Reply {
  const calls = m.tool_calls ? { tool_calls: m.tool_calls } : {};
  if (m.content === null || typeof m.content === "string") return { role: "assistant", content: m.content, ...calls };
  if (isAnthropicShaped(m.content)) return replyOfParts(m.content, m.tool_calls);
  return { role: "assistant", content: JSON.stringify(m.content), ...calls };
}
