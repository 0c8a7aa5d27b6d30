import { AppError } from "../core/errors";
import type { Message, ToolCall } from "../core/message";
import type { Middleware } from "./middleware/types";
import type { TurnPlan } from "./prepare";
import { type AgentState, applyUpdate, makeMessage } from "./state";
import type { StepWrite } from "./tools/loop";
import { executeToolCalls } from "./tools/execute";
import type { Decision } from "./turn";

/** The server tools whose calls stop a run for a person's decision (human_in_the_loop middleware). */
export const approvalToolsOf = (middlewares: readonly Middleware[]): string[] => middlewares.flatMap((m) => m.approvalTools ?? []);

/** The calls the thread's last message left waiting for a decision: an assistant message's calls to approval tools (none answered yet). */
export function waitingCalls(messages: readonly Message[], approvalTools: readonly string[]): ToolCall[] {
  const last = messages.at(-1);
  if (last?.role !== "assistant") return [];
  return (last.tool_calls ?? []).filter((c) => approvalTools.includes(c.function.name));
}

/**
 * A resumed run's first writes: the approved calls run (an edited one with its new arguments), the
 * rejected ones answered with the person's message; 400 BEM-011 when no call waits, or the decisions
 * do not match the waiting calls one to one. Decided under the run's lease, on the state it extends.
 */
export async function resumeWrites(p: TurnPlan, state: AgentState, decisions: readonly Decision[]): Promise<{ state: AgentState; writes: StepWrite[] }> {
  const waiting = waitingCalls(state.messages, approvalToolsOf(p.middlewares));
  if (waiting.length === 0) throw new AppError("BEM-011", "command.resume: no tool call waits for a decision on this thread");
  if (decisions.length !== waiting.length)
    throw new AppError("BEM-011", `command.resume: ${waiting.length} call(s) wait for a decision; send ${waiting.length} decision(s), in their order`);
  const run: ToolCall[] = [];
  const refused: Message[] = [];
  waiting.forEach((call, i) => {
    const d = decisions[i]!;
    if (d.type === "approve") run.push(call);
    else if (d.type === "edit") {
      if (d.edited_action.name !== call.function.name)
        throw new AppError("BEM-011", `command.resume: decision ${i} edits '${d.edited_action.name}', but the call is to '${call.function.name}'`);
      run.push({ ...call, function: { name: call.function.name, arguments: JSON.stringify(d.edited_action.args) } });
    } else {
      const content = d.message ?? `The user rejected the call to ${call.function.name}.`;
      refused.push(makeMessage({ role: "tool", tool_call_id: call.id, content, is_error: true }, p.runtime));
    }
  });
  const writes: StepWrite[] = [];
  let next = state;
  if (run.length > 0) {
    const step = await executeToolCalls(run, p.tools, next, p.runtime, p.reducers);
    next = step.state;
    writes.push({ source: "tools", update: step.update });
  }
  if (refused.length > 0) {
    const update = { messages: refused };
    next = applyUpdate(next, update, p.reducers);
    writes.push({ source: "human_in_the_loop", update });
  }
  return { state: next, writes };
}
