import { callModel, streamModel } from "../providers/call";
import { openStreamWithFailover, runWithFailover, type Attempt } from "../providers/failover";
import { droppedFor } from "../providers/portable";
import { paramsFor } from "../providers/openai-fields";
import { untruncated } from "./truncation";
import { isProviderError } from "../providers/provider-error";
import { ClientDeltas } from "./client-deltas";
import { StreamAccumulator } from "../providers/stream-accumulator";
import type { ChatMessage, ChatRequest, ChatResult, FunctionTool } from "../providers/types";
import type { ModelConfig } from "../config/model-config";
import type { Message } from "../core/message";
import { repairToolPairs } from "./middleware/tool-pairs";
import { assemble } from "./prompt";
import type { Tool } from "./tools/define";
import { toolDefinitions } from "./tools/define";
import { usageOf, type TurnUsage } from "./usage";
import type { Hold, SpendGuard } from "./spend-guard";
import type { TurnDeps, TurnPlan, StreamHooks } from "./prepare";

/** A request's max_tokens above what `m` can write (models.yaml max_output_tokens) is clamped to it: clients such as Claude Code ask for tens of thousands. */
export function outputLimit(m: ModelConfig, asked: number | undefined): number | undefined {
  return asked !== undefined && m.max_output_tokens !== undefined ? Math.min(asked, m.max_output_tokens) : asked;
}

/** The warning a clamped max_tokens gives (the response's warnings, X-Edgeweave-Warnings). */
export function outputLimitWarning(m: ModelConfig, asked: number | undefined): string[] {
  const limit = outputLimit(m, asked);
  return limit !== asked ? [`max_tokens ${asked} clamped to ${limit}, the most ${m.name} writes (max_output_tokens)`] : [];
}

/** The fields the answering model's provider did not get (docs/guides/anthropic-and-claude-code.md, chat's sampling fields). */
export function droppedWarning(m: ModelConfig, input: TurnPlan["input"]): string[] {
  const dropped = droppedFor(m.provider, { ...paramsFor(m, input.params), messages: input.messages });
  return dropped.length > 0 ? [`not sent to ${m.name} (${m.provider}): ${dropped.join(", ")}`] : [];
}

export type Call = { result: ChatResult; model: ModelConfig; attempts: Attempt[]; usage: TurnUsage };
/** A provider call that began answering and then failed (a stream cut): billed all the same, its usage estimated. */
export type CutCall = { model: ModelConfig; usage: TurnUsage };

/** One model call of a run: what it sends (the system prompt, the conversation, the server tools) and where the answer streams. */
export type RoutedCall = {
  deps: Pick<TurnDeps, "env" | "fetch" | "signal">;
  plan: Pick<TurnPlan, "input" | "clientSystem" | "route">;
  facts: Message[];
  system: string | null;
  messages: Message[];
  serverTools: readonly Tool[];
  stream?: StreamHooks;
  /** The run's first call: a stream's `start` fires only then. */
  first: boolean;
  /** Which model call of the run this is (0 for the first): a later call's deltas carry it. */
  step: number;
  /** A stream that began answering and was cut: billed all the same. */
  onCut?: (c: CutCall) => void;
  /** The turn's spend budgets: each attempt reserves its most possible cost first and settles after. */
  budget?: SpendGuard;
};

/** One model call over the routed candidates: failover, and for streams only before the first event. */
export async function callRouted(call: RoutedCall): Promise<Call> {
  const { deps, plan: p, system, messages, stream, first, onCut = () => undefined, budget } = call;
  const clientTools: FunctionTool[] = p.input.params?.tools ?? [];
  const tools = [...toolDefinitions(call.serverTools), ...clientTools];
  const instructions: ChatMessage[] = system !== null ? [{ role: "system", content: system }, ...p.clientSystem] : p.clientSystem;
  // What the model sees holds no call without its result (the thread keeps it as it happened): both
  // providers refuse one, so a call a client left unanswered (a user message instead of its result)
  // failed every later turn on the thread, by any key.
  const turns = repairToolPairs(messages);
  // Built once per candidate: the call and its usage estimate read the same request (a 1,000-message thread's prompt assembled twice cost ~0.1 ms a turn).
  const requests = new Map<ModelConfig, ChatRequest>();
  const requestFor = (m: ModelConfig): ChatRequest => {
    const built = requests.get(m);
    if (built) return built;
    const wire = assemble({ instructions, facts: call.facts, turns, input: [], factsLast: p.input.factsLast === true }, m.max_tokens);
    if (wire.length < instructions.length + call.facts.length + turns.length) untruncated(p.input, m);
    const params = paramsFor(m, p.input.params);
    const maxOutput = outputLimit(m, params?.max_output_tokens);
    const request: ChatRequest = {
      ...(params ?? {}),
      messages: wire,
      ...(tools.length > 0 ? { tools } : {}),
      ...(maxOutput !== undefined ? { max_output_tokens: maxOutput } : {}),
    };
    requests.set(m, request);
    return request;
  };
  // A cancelled run's call stops: the signal's reason (BEM-204) ends the run, never retried (failover.ts).
  deps.signal?.throwIfAborted();
  const ctx = { env: deps.env, fetch: deps.fetch, ...(deps.signal ? { signal: deps.signal } : {}) };
  // Each attempt (a retry, a failover candidate) holds its most possible cost until it settles to what it cost.
  const holds = new Map<ModelConfig, Hold>();
  const reserve = async (m: ModelConfig) => {
    if (budget) holds.set(m, await budget.reserve(m, requestFor(m)));
  };
  const settle = (m: ModelConfig, usage: TurnUsage | null) => {
    holds.get(m)?.settle(usage ? Math.round(usage.cost * 1_000_000) : 0);
    holds.delete(m);
  };
  // An upstream that answered 200 with a body it could not use charged the call: billed (estimated), then failed over as before.
  const billAnswered = (m: ModelConfig, e: unknown) => {
    const answered = isProviderError(e) && e.answered ? usageOf(requestFor(m).messages, m, NOTHING) : null;
    if (answered) onCut({ model: m, usage: answered });
    settle(m, answered);
  };
  if (!stream) {
    const { value, model, attempts } = await runWithFailover(p.route.candidates, async (m) => {
      await reserve(m);
      return callModel(m, requestFor(m), ctx).catch((e: unknown) => {
        billAnswered(m, e);
        throw e;
      });
    });
    const usage = usageOf(requestFor(model).messages, model, value);
    settle(model, usage);
    return { result: value, model, attempts, usage };
  }
  const reserved = async function* (m: ModelConfig) {
    await reserve(m);
    yield* streamModel(m, requestFor(m), ctx);
  };
  const opened = await openStreamWithFailover(p.route.candidates, (m) => billedBeforeFirst(reserved(m), (e) => billAnswered(m, e)));
  if (first) await stream.start(opened.model, p.route);
  const acc = new StreamAccumulator();
  const sent = requestFor(opened.model).messages;
  const client = new ClientDeltas(new Set(call.serverTools.map((t) => t.name)));
  let result: ChatResult;
  try {
    for await (const ev of opened.value) {
      acc.push(ev);
      const part = ev.type === "delta" ? client.of(ev) : null;
      if (part) await stream.delta(call.step > 0 ? { ...part, step: call.step } : part);
    }
    result = acc.result(opened.model.name);
  } catch (e) {
    // The provider took the call and produced part of an answer: it bills that, so do we (estimated).
    const cut = usageOf(sent, opened.model, acc.partial());
    onCut({ model: opened.model, usage: cut });
    settle(opened.model, cut);
    throw e;
  }
  const usage = usageOf(sent, opened.model, result);
  settle(opened.model, usage);
  return { result, model: opened.model, attempts: opened.attempts, usage };
}

/** What an unusable answer gave: nothing, so its usage is the prompt sent (usageOf estimates it). */
const NOTHING: ChatResult = { message: { role: "assistant", content: "" }, finish_reason: "stop", upstream_model: "" };

/** The stream's events; a failure before its first one is passed to `bill` (one after it is the consumer's to bill, as a cut). */
async function* billedBeforeFirst<E>(events: AsyncIterable<E>, bill: (e: unknown) => void): AsyncGenerator<E> {
  let started = false;
  try {
    for await (const ev of events) {
      started = true;
      yield ev;
    }
  } catch (e) {
    if (!started) bill(e);
    throw e;
  }
}
