import { AppError } from "../../core/errors";
import { MAX_TOOL_CALLS, type Message, type ToolCall } from "../../core/message";
import { chargeRequests } from "../../auth/rate-limit";
import type { Runtime } from "../runtime";
import { applyUpdate, type AgentState, type Reducers, type StateUpdate } from "../state";
import type { Tool } from "./define";
import { executeToolCalls, type ToolError } from "./execute";

/** One labelled write of a step, in order; the pipeline checkpoints each. */
export type StepWrite = { source: string; update: StateUpdate };

/**
 * What the pipeline's model call returns: either the assistant reply alone (the
 * loop appends it), or the whole new state with the writes that produced it
 * (when middleware ran around the call) — its last message is the reply.
 */
export type ModelTurn = Message | { state: AgentState; writes: StepWrite[] };

export type LoopStep = { index: number; writes: StepWrite[]; toolErrors: ToolError[] };

export type ToolLoopOptions = {
  callModel: (state: AgentState, info: { index: number; remaining_steps: number }) => Promise<ModelTurn>;
  tools: readonly Tool[];
  state: AgentState;
  runtime: Runtime;
  /** remaining_steps: how many model calls this run may make. */
  maxSteps: number;
  reducers?: Reducers;
  /** Tools the client executes (OpenAI style): calls to them end the loop and are returned as pending. */
  clientTools?: Iterable<string>;
  /** The most server-tool calls the run makes (Responses' max_tool_calls); later ones are answered "not run" and the model goes on. */
  maxToolCalls?: number;
  /** Called after each complete step (model call + its tools), e.g. to checkpoint it. */
  onStep?: (step: LoopStep, state: AgentState) => void | Promise<void>;
};

export type ToolLoopResult = { state: AgentState; steps: LoopStep[]; pendingToolCalls: ToolCall[] };

/** BEM-081, carrying the state after the last complete step so the pipeline can save it. */
export class StepsExhaustedError extends AppError {
  constructor(
    readonly state: AgentState,
    readonly steps: LoopStep[],
    maxSteps: number,
  ) {
    super("BEM-081", `The run used all ${maxSteps} steps and the model still wants to call tools`);
  }
}

/**
 * model → tools → model until the model replies without tool calls. A step is
 * one model call plus the tools it asked for. When the model asks for tools in
 * the last allowed step, those tools still run (their step completes and is
 * saved) and the run then ends with StepsExhaustedError (BEM-081).
 */
export async function runToolLoop(opts: ToolLoopOptions): Promise<ToolLoopResult> {
  if (!Number.isInteger(opts.maxSteps) || opts.maxSteps < 1) throw new AppError("BEM-081", "remaining_steps must be at least 1");
  const reducers = opts.reducers ?? {};
  const client = new Set(opts.clientTools ?? []);
  const steps: LoopStep[] = [];
  let state = opts.state;
  let toolCalls = 0;
  for (let index = 0; ; index++) {
    const remaining = opts.maxSteps - index;
    const turn = await opts.callModel(state, { index, remaining_steps: remaining });
    let writes: StepWrite[];
    if ("role" in turn) {
      const update = { messages: [turn] };
      state = applyUpdate(state, update, reducers);
      writes = [{ source: "model", update }];
    } else {
      state = turn.state;
      writes = [...turn.writes];
    }
    const last = state.messages.at(-1);
    const calls = last?.role === "assistant" ? (last.tool_calls ?? []) : [];
    // A reply that cannot be stored is refused before any of its calls runs (a model can be talked into hundreds).
    if (calls.length > MAX_TOOL_CALLS) {
      throw new AppError("BEM-220", `The model asked for ${calls.length} tool calls in one reply; at most ${MAX_TOOL_CALLS} are taken, and none of them ran`);
    }
    const serverCalls = calls.filter((c) => !client.has(c.function.name));
    const pendingToolCalls = calls.filter((c) => client.has(c.function.name));
    let toolErrors: ToolError[] = [];
    if (serverCalls.length > 0) {
      const max = opts.maxToolCalls ?? Number.POSITIVE_INFINITY;
      const cap = { allowed: Math.max(0, max - toolCalls), why: `this response's max_tool_calls (${max}) is used up` };
      const running = Math.min(serverCalls.length, cap.allowed);
      toolCalls += running;
      // Each server tool call that runs counts as a request of the calling key's, as an MCP batch's tool calls do (429 BEM-024, none run).
      const caller = opts.runtime.caller;
      if (caller && running > 0) await chargeRequests(caller.env, caller.principal, running);
      const result = await executeToolCalls(serverCalls, opts.tools, state, opts.runtime, reducers, cap);
      state = result.state;
      toolErrors = result.errors;
      writes.push({ source: "tools", update: result.update });
    }
    const step = { index, writes, toolErrors };
    steps.push(step);
    await opts.onStep?.(step, state);
    if (serverCalls.length === 0 || pendingToolCalls.length > 0) return { state, steps, pendingToolCalls };
    if (remaining <= 1) throw new StepsExhaustedError(state, steps, opts.maxSteps);
  }
}
