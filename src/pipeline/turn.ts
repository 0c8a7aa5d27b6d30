import type { Principal } from "../core/principal";
import type { MemoryReport } from "../memory/report";
import type { ScopeInput } from "../memory/scope";
import type { ChatRequest, ChatResult } from "../providers/types";
import type { Attempt } from "../providers/failover";
import type { ModelConfig } from "../config/model-config";
import type { RouteResult } from "../routing/router";
import type { ParsedMessageInput } from "../core/message";
import type { AgentState } from "./state";
import type { Timings } from "./timings";
import type { TurnUsage, UsageCause } from "./usage";

/** What resent-history reconciliation (reconcile.ts) did, as reported in `edgeweave.reconciled`. */
export type ReconcileReport = { matched: number; appended: number; branched_from: string | null; reset?: true };

/** A Responses turn's part of the input: how it continues, and the record its save stores. */
export type ResponsesTurn = {
  /**
   * Continue after this checkpoint (a Responses `previous_response_id` found in D1): at the thread's
   * head a plain continuation, elsewhere a new branch there, as `checkpointId` (and with its right).
   */
  continueFrom?: string;
  /**
   * Continue after a Responses response stored in this thread's object (`previous_response_id`):
   * resolved there, under the run's lease, to `continueFrom` its checkpoint (404 BEM-100 when the
   * thread has no such response). `answers`: the call ids the input's function_call_outputs answer,
   * each one a call that response made (400 BEM-101 otherwise).
   */
  previousResponse?: { id: string; answers: string[] };
  /** The thread is a `conversation` the client named: it must exist (404 BEM-102), checked in its object. */
  conversation?: boolean;
  /** A one-off call's new thread (none named): listed as a `response` thread, kept 30 days (thread-list.ts ThreadKind). */
  oneOff?: true;
  /** Store the Response: written in the run's last save, in the same transaction as its checkpoint. */
  record?: ResponseTemplate;
};

/**
 * A Response as far as the request decides it (src/responses/body.ts renders the rest from the
 * turn's result): its id, its output items' id base, when it was created, the fields echoed from
 * the request, and its input items as stored.
 */
export type ResponseTemplate = { id: string; item: string; created_at: number; echo: Record<string, unknown>; input: unknown[] };

/** A decision on one stopped tool call: run it, run it with other arguments, or answer it with a refusal. */
export type Decision =
  | { type: "approve" }
  | { type: "edit"; edited_action: { name: string; args: Record<string, unknown> } }
  | { type: "reject"; message?: string };

/** One agent run as the endpoints describe it. */
export type TurnInput = {
  principal: Principal;
  agentName?: string;
  /** Stateful when set: the thread holds the history and the input is only the new messages. */
  threadId?: string;
  /** New input (stateful) or the whole conversation (stateless). System messages are per-call instructions. */
  messages: ParsedMessageInput[];
  /** A configured model name; "auto" or absent routes. */
  model?: string;
  capabilities?: string[];
  /** The client's memory_scopes: may only narrow to what the key grants. */
  memoryScopes?: readonly ScopeInput[];
  /** Continue from this checkpoint: the turn starts a new branch there. */
  checkpointId?: string;
  /**
   * Continue from an empty thread (a resend that diverges inside the thread's first checkpoint): the run
   * sees no stored messages, and its first save removes them (`remove_all`, history keeps them) in the
   * same transaction as its input, so a run that fails leaves the thread as it was.
   */
  fromEmpty?: true;
  /**
   * The messages may repeat what the thread already holds (clients that resend the whole
   * history): the thread's object stores only the new part, or branches (pipeline/reconcile.ts).
   */
  resent?: boolean;
  /** What only a Responses request carries (src/responses/plan.ts); settled in the thread's object, under the run's lease. */
  responses?: ResponsesTurn;
  /**
   * A person's decisions on the calls a human_in_the_loop middleware stopped the last run at (one per call, in
   * order): the run executes the approved (or edited) calls, answers the rejected ones, then calls the model.
   * The turn then has no new messages of its own.
   */
  resume?: { decisions: Decision[] };
  /** Names the run for a cancel (the LangGraph API's run id): its thread's object can stop it by this key. */
  cancelKey?: string;
  /** Per-run context for the agent's dynamic prompt. */
  context?: Record<string, unknown>;
  /** A D1 bookmark the client got from a fact write: the run reads facts at least that fresh. */
  bookmark?: string;
  /** What the turn's provider calls are recorded as in usage (default "turn"). */
  cause?: UsageCause;
  /** Phase timings of the request so far (Server-Timing); a new clock when absent. */
  timings?: Timings;
  /** Facts go after the conversation, not before it (Anthropic Messages: keeps the client's cached prefix; prompt.ts). */
  factsLast?: boolean;
  /** The request metadata's values of the keys budgets may be on (src/budgets/tags.ts): the metadata budgets it spends from. */
  budgetTags?: Record<string, string>;
  /** Passed through to the provider: tools, tool_choice, response_format, temperature… */
  params?: Omit<ChatRequest, "messages">;
  /** Responses' `truncation: "disabled"`: a conversation that does not fit the model's window is 400 BEM-112, not cut to its newest turns. */
  truncation?: "disabled";
  /** Responses' `max_tool_calls`: the most calls of the agent's own tools the run makes (later ones are answered "not run"). */
  maxToolCalls?: number;
};

export type TurnResult = {
  threadId: string | null;
  checkpointId: string | null;
  reply: ChatResult["message"];
  finishReason: ChatResult["finish_reason"];
  /** Anthropic's own stop reason and sequence, when the answering provider was Anthropic. */
  stop?: { reason: string; sequence: string | null };
  model: ModelConfig;
  route: RouteResult;
  attempts: Attempt[];
  usage: TurnUsage;
  warnings: string[];
  /**
   * The text of each model call before the last, in order ("" for one that only called tools): a run
   * whose agent ran its own tools took several steps, and the answer shows each step's text (chat: a
   * blank line apart; Responses: one message item per step), streamed or not.
   */
  stepTexts?: string[];
  /** Which facts the model was given, and why. */
  memory: MemoryReport;
  /** What resent-history reconciliation did (`resent` runs on a thread), else null. */
  reconciled?: ReconcileReport | null;
  /** The Response stored with the turn's checkpoint (`responses.record`), exactly as stored. */
  response?: Record<string, unknown>;
  timings: Timings;
  /** The thread state after the run, every channel (not returned over HTTP). */
  state: AgentState;
};

/**
 * How a run reports its routing. The compact form is the default in every run response and
 * the form each checkpoint stores (a trace lists every strategy's input and output, ~1.7 KB
 * on the shipped models, and would be repeated per turn); the full form adds the failover
 * order and the trace, on request (`X-Edgeweave-Trace: full` or `"trace": "full"`).
 * `POST /v1/route` always returns the full trace.
 */
export type RouteSummary = { model: string; reason: string; candidate_count: number; attempts: Attempt[] };
export type RouteDetail = RouteSummary & { candidates: string[]; trace: RouteResult["trace"] };
export type TraceLevel = "summary" | "full";

export function routeSummary(model: ModelConfig, route: RouteResult, attempts: Attempt[]): RouteSummary {
  return { model: model.name, reason: route.reason, candidate_count: route.candidates.length, attempts };
}

export function routingOf(r: Pick<TurnResult, "model" | "route" | "attempts">, level: TraceLevel = "summary"): RouteSummary | RouteDetail {
  const summary = routeSummary(r.model, r.route, r.attempts);
  return level === "full" ? { ...summary, candidates: r.route.candidates.map((m) => m.name), trace: r.route.trace } : summary;
}

/**
 * What of an Anthropic upstream's reply a format without Anthropic's blocks leaves out (chat, Responses,
 * invoke render its text and tool calls): its server-tool blocks and any block new to us, by type, and
 * its text's citations. The thread keeps them all.
 */
export function unrenderedWarning(reply: TurnResult["reply"]): string[] {
  const parts = reply.parts ?? [];
  const blocks = [...new Set(parts.flatMap((p) => (p.type === "anthropic_block" ? [p.block.type] : [])))];
  if (parts.some((p) => p.type === "text" && p.citations !== undefined)) blocks.push("citations");
  return blocks.length > 0 ? [`not in this format, kept in the thread: the reply's ${blocks.join(", ")}`] : [];
}

/**
 * The one turn summary every wire format renders (chat's and Responses' `edgeweave`, invoke's body).
 * `stored: false` (Responses with store:false) reports no thread; `memory` lets a format cap the report it stores;
 * `blocks`: the format renders an Anthropic reply's blocks whole (the Messages API), else unrenderedWarning says what it left out.
 */
export function turnSummary(
  r: Omit<TurnResult, "state" | "timings">,
  opts: { trace?: TraceLevel; stored?: boolean; memory?: (m: MemoryReport) => unknown; blocks?: boolean } = {},
) {
  const stored = opts.stored ?? true;
  return {
    thread_id: stored ? r.threadId : null,
    checkpoint_id: stored ? r.checkpointId : null,
    routing: routingOf(r, opts.trace),
    cost: r.usage.cost,
    usage_estimated: r.usage.estimated,
    warnings: opts.blocks ? r.warnings : [...r.warnings, ...unrenderedWarning(r.reply)],
    // A run prepared without memory (as some tests build it) reports none.
    ...(r.memory ? { memory: opts.memory ? opts.memory(r.memory) : r.memory } : {}),
    ...(r.reconciled ? { reconciled: r.reconciled } : {}),
  };
}
