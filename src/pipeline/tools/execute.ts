import { isAppError } from "../../core/errors";
import { contentOf, type Span } from "../../core/trace";
import type { Message, ToolCall } from "../../core/message";
import type { Runtime } from "../runtime";
import { applyStep, isOverwrite, makeMessage, type AgentState, type Reducers, type StateUpdate } from "../state";
import { Command, type Tool, type ToolResult } from "./define";

export type ToolError = { tool_call_id: string; tool: string; message: string };
export type ToolStep = {
  state: AgentState;
  /** The step's merged update, to checkpoint as one write. */
  update: StateUpdate;
  /** Calls that failed; each was answered with an error tool message the model can read. */
  errors: ToolError[];
};

/** A step's tool calls run this many at a time: a model asking for a hundred does not start a hundred writes at once. */
export const TOOL_CALLS_AT_ONCE = 4;

/**
 * Runs one step's tool calls, TOOL_CALLS_AT_ONCE at a time, and merges their results through the
 * channel reducers (conflicting last-value writes → BEM-082, thrown).
 *
 * A failing call — unknown tool, arguments that are not JSON or fail the
 * schema, a handler that throws — does not fail the run: it is answered with a
 * tool message starting "Error:" (metadata.error = "BEM-080") so the model can
 * correct itself, and listed in `errors` for logs. Handler exceptions that are
 * not AppErrors are reported without their text, which may hold internals.
 */
export async function executeToolCalls(
  toolCalls: readonly ToolCall[],
  tools: readonly Tool[],
  state: AgentState,
  runtime: Runtime,
  reducers: Reducers = {},
  cap: { allowed: number; why: string } = { allowed: Number.POSITIVE_INFINITY, why: "" },
): Promise<ToolStep> {
  const byName = new Map(tools.map((t) => [t.name, t]));
  const errors: ToolError[] = [];
  const updates = await inTurns(toolCalls, async (call, i): Promise<StateUpdate> => {
    const span = runtime.trace?.child(`execute_tool ${call.function.name}`, "internal", {
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": call.function.name,
      "gen_ai.tool.call.id": call.id,
      "gen_ai.tool.type": "extension",
      "gen_ai.tool.description": byName.get(call.function.name)?.description,
      "gen_ai.tool.call.arguments": contentOf(runtime.trace, () => call.function.arguments),
    });
    try {
      const update = await runCall(call, i, span);
      const answer = (Array.isArray(update.messages) ? update.messages : []).find((m) => "role" in m && m.role === "tool");
      span?.set({ "gen_ai.tool.call.result": answer && "content" in answer ? contentOf(span, () => answer.content) : undefined });
      return update;
    } finally {
      span?.end();
    }
  });
  const { state: next, update } = applyStep(state, updates, reducers);
  return { state: next, update, errors };

  async function runCall(call: ToolCall, i: number, span: Span | undefined): Promise<StateUpdate> {
    const fail = (message: string): StateUpdate => {
      errors.push({ tool_call_id: call.id, tool: call.function.name, message });
      span?.fail("BEM-080", message);
      return { messages: [reply(call, { content: `Error: ${message}`, metadata: { error: "BEM-080" } }, runtime)] };
    };
    if (i >= cap.allowed) return fail(`not run: ${cap.why}; answer without more tool calls.`);
    const tool = byName.get(call.function.name);
    if (!tool) return fail(`unknown tool '${call.function.name}'. Available tools: ${[...byName.keys()].join(", ") || "none"}.`);
    let args: unknown;
    try {
      args = call.function.arguments.trim() === "" ? {} : JSON.parse(call.function.arguments);
    } catch {
      return fail(`arguments for '${tool.name}' are not valid JSON.`);
    }
    const checked = tool.validate(args);
    if (!checked.ok) return fail(`invalid arguments for '${tool.name}': ${checked.error}`);
    const input = { ...checked.value };
    for (const [field, what] of Object.entries(tool.injected ?? {})) {
      input[field] = what === "state" ? state : what === "tool_call_id" ? call.id : runtime.context;
    }
    let result: ToolResult;
    try {
      // The tool's own operations (a memory write) nest under its span.
      result = await tool.handler(input, { ...runtime, ...(span ? { trace: span } : {}), toolCallId: call.id, state });
    } catch (e) {
      return fail(isAppError(e) ? `'${tool.name}' failed: ${e.message}` : `'${tool.name}' failed.`);
    }
    if (result instanceof Command) return answered(call, result.update, runtime);
    return { messages: [reply(call, typeof result === "string" ? { content: result } : result, runtime)] };
  }
}

/** `run` over `items`, at most TOOL_CALLS_AT_ONCE in flight, results in the items' order. */
async function inTurns<T, R>(items: readonly T[], run: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < items.length; i = next++) out[i] = await run(items[i]!, i);
  };
  await Promise.all(Array.from({ length: Math.min(TOOL_CALLS_AT_ONCE, items.length) }, worker));
  return out;
}

function reply(call: ToolCall, result: { content: Message["content"]; metadata?: Record<string, unknown> }, runtime: Runtime): Message {
  return makeMessage(
    { role: "tool", content: result.content, name: call.function.name, tool_call_id: call.id, ...(result.metadata ? { metadata: result.metadata } : {}) },
    runtime,
  );
}

/** A Command must answer its call: when its messages hold no tool message for it, one is added. */
function answered(call: ToolCall, update: StateUpdate, runtime: Runtime): StateUpdate {
  const msgs = update.messages;
  const list = msgs === undefined ? [] : isOverwrite(msgs) ? msgs.messages : msgs;
  const hasReply = list.some((m) => "role" in m && m.role === "tool" && m.tool_call_id === call.id);
  if (hasReply) return update;
  const ack = reply(call, { content: `${call.function.name}: done.` }, runtime);
  if (msgs !== undefined && isOverwrite(msgs)) return { ...update, messages: { ...msgs, messages: [...msgs.messages, ack] } };
  return { ...update, messages: [...list, ack] };
}
