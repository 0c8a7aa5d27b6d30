import { estimateTokens } from "../core/tokens";
import { callModel, streamModel } from "../providers/call";
import { openStreamWithFailover, runWithFailover, type Attempt } from "../providers/failover";
import { StreamAccumulator } from "../providers/stream-accumulator";
import type { ChatMessage, ChatResult, FunctionTool } from "../providers/types";
import type { ModelConfig } from "../routing/model-config";
import type { Message } from "../core/message";
import { assemble, tokensOf } from "./prompt";
import type { Tool } from "./tools/define";
import { toolDefinitions } from "./tools/define";
import type { TurnUsage } from "./turn";
import { costOf } from "./usage";
import type { Prepared, RunDeps, StreamHooks } from "./prepare";

export type Call = { result: ChatResult; model: ModelConfig; attempts: Attempt[]; usage: TurnUsage };

export function usageOf(messages: ChatMessage[], model: ModelConfig, result: ChatResult): TurnUsage {
  const reported = result.usage;
  const prompt = reported?.prompt_tokens ?? tokensOf(messages);
  const completion = reported?.completion_tokens ?? estimateTokens({ role: "assistant", content: result.message.content, tool_calls: result.message.tool_calls });
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion, cost: costOf(prompt + completion, model.cost_per_1k_tokens), estimated: reported === undefined };
}

export function addUsage(a: TurnUsage, b: TurnUsage): TurnUsage {
  return {
    prompt_tokens: a.prompt_tokens + b.prompt_tokens,
    completion_tokens: a.completion_tokens + b.completion_tokens,
    total_tokens: a.total_tokens + b.total_tokens,
    cost: a.cost + b.cost,
    estimated: a.estimated || b.estimated,
  };
}

/** One model call over the routed candidates: failover, and for streams only before the first event. */
export async function callRouted(deps: RunDeps, p: Prepared, system: string | null, messages: Message[], serverTools: readonly Tool[], stream?: StreamHooks, first = true): Promise<Call> {
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

