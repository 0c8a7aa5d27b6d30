import type { ModelConfig } from "../config/model-config";
import type { Message } from "../core/message";
import type { SseWriter } from "./sse";
import type { StreamRenderer } from "./stream-run";
import { streamErrorBody } from "./turn-edge";
import type { TurnResult } from "../pipeline/turn";
import type { DeltaEvent } from "../providers/types";
import type { ThreadState } from "../thread/types";
import type { Assistant } from "../agent-protocol/assistants";
import { interruptOf } from "../agent-protocol/interrupts";
import { toLangChain } from "../agent-protocol/messages";
import type { StreamMode } from "../agent-protocol/run-body";
import { eventId } from "./agent-protocol-run-log";
import { valuesOf } from "./agent-protocol-state";

/**
 * A run as LangGraph's event stream, in the stream modes asked for: `metadata` first, then
 * `values` (the state with the input, and at the end), `messages` (messages-tuple: each token as an
 * AIMessageChunk with its metadata), `messages/partial` and `messages/complete` (messages mode),
 * `updates` (what the model and the tools wrote) at the end; `error` when the run fails after it began.
 * Every event has an `id:` (its number in the run), as the SDK keeps the last one to rejoin from.
 */
export type RunView = {
  runId: string;
  threadId: string | null;
  assistant: Assistant;
  modes: readonly StreamMode[];
  /** The input messages as the first `values` shows them (the thread stores them under ids of its own). */
  input: readonly Omit<Message, "created_at">[];
  /** The state the run starts from (at its branch point); read beside the model call, so it costs no latency. */
  before: Promise<ThreadState>;
  /** The state the run ended in. */
  after(r: TurnResult): Promise<ThreadState>;
};

/** The messages a run added after its input (the model's replies and server tools' results); the thread stores the input under ids of its own. */
export function addedBy(view: Pick<RunView, "input">, before: ThreadState, after: ThreadState): Message[] {
  const old = new Set(before.channels.messages.map((m) => m.id));
  return after.channels.messages.filter((m) => !old.has(m.id)).slice(view.input.length);
}

/** The state the run starts from with its input appended, as the first `values` event shows it. */
function withInput(view: RunView, before: ThreadState): Record<string, unknown> {
  const now = Date.now();
  return valuesOf({
    ...before,
    channels: { ...before.channels, messages: [...before.channels.messages, ...view.input.map((m) => ({ ...m, created_at: now }))] },
  });
}

/** `updates` as LangGraph's nodes would report them: the model's messages, then the tools'. */
function updatesOf(added: Message[]): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const m of added) {
    const node = m.role === "tool" ? "tools" : "model";
    const last = out.at(-1);
    const list = last?.[node] as { messages: unknown[] } | undefined;
    if (list) list.messages.push(toLangChain(m));
    else out.push({ [node]: { messages: [toLangChain(m)] } });
  }
  return out;
}

type Chunk = { id: string; content: string; calls: Map<number, { id?: string; name?: string; args: string }> };

export function runRenderer(view: RunView): StreamRenderer {
  let seq = 0;
  let model: ModelConfig | undefined;
  let step = 1;
  let chunk: Chunk = { id: `run-${view.runId}-1`, content: "", calls: new Map() };
  const wants = (m: StreamMode) => view.modes.includes(m);
  const announced = new Set<string>();
  // start() runs inside the SSE producer while deltas may already arrive: one queue keeps the events in order.
  let queue: Promise<unknown> = Promise.resolve();
  const serial = (fn: () => Promise<void>): Promise<void> => {
    const next = queue.then(fn);
    queue = next.catch(() => undefined);
    return next;
  };
  const emit = (out: SseWriter, event: string, data: unknown) => out.send(JSON.stringify(data), event, eventId(view.runId, seq++));
  const meta = () => ({
    run_id: view.runId,
    thread_id: view.threadId,
    assistant_id: view.assistant.assistant_id,
    graph_id: view.assistant.graph_id,
    langgraph_node: "model",
    langgraph_step: step,
    ls_provider: model?.provider,
    ls_model_name: model?.name,
    tags: [],
  });
  const partial = () => ({
    type: "ai",
    id: chunk.id,
    content: chunk.content,
    tool_calls: [...chunk.calls.values()].map((c) => ({ id: c.id, name: c.name ?? "", args: parsedOrEmpty(c.args), type: "tool_call" })),
    invalid_tool_calls: [],
    additional_kwargs: {},
    response_metadata: {},
  });

  /** A delta that starts a message after calls (a further model step) begins a new chunk id. */
  function advance(ev: DeltaEvent): void {
    const afterCalls = chunk.calls.size > 0 && ev.content !== undefined && ev.content !== "";
    const repeatCall = ev.tool_calls?.some((t) => t.id !== undefined && chunk.calls.get(t.index)?.id !== undefined);
    if (!afterCalls && !repeatCall) return;
    step++;
    chunk = { id: `run-${view.runId}-${step}`, content: "", calls: new Map() };
  }

  return {
    headers: () => ({}),
    start: (out, m) =>
      serial(async () => {
        model = m;
        await emit(out, "metadata", { run_id: view.runId, attempt: 1 });
        if (wants("values")) await emit(out, "values", withInput(view, await view.before));
      }),
    delta: (out, ev) =>
      serial(async () => {
        if (ev.content === undefined && !ev.tool_calls?.length) return;
        advance(ev);
        chunk.content += ev.content ?? "";
        for (const t of ev.tool_calls ?? []) {
          const c = chunk.calls.get(t.index) ?? { args: "" };
          chunk.calls.set(t.index, { id: c.id ?? t.id, name: c.name ?? t.name, args: c.args + (t.arguments ?? "") });
        }
        if (wants("messages-tuple")) {
          const toolChunks = (ev.tool_calls ?? []).map((t) => ({ index: t.index, id: t.id, name: t.name, args: t.arguments ?? "", type: "tool_call_chunk" }));
          const data = {
            type: "AIMessageChunk",
            id: chunk.id,
            content: ev.content ?? "",
            tool_call_chunks: toolChunks,
            additional_kwargs: {},
            response_metadata: {},
          };
          await emit(out, "messages", [data, meta()]);
        }
        if (wants("messages")) {
          if (!announced.has(chunk.id)) {
            announced.add(chunk.id);
            await emit(out, "messages/metadata", { [chunk.id]: { metadata: meta() } });
          }
          await emit(out, "messages/partial", [partial()]);
        }
      }),
    done: (out, r) =>
      serial(async () => {
        const [before, after] = await Promise.all([view.before, view.after(r)]);
        const added = addedBy(view, before, after);
        // Tool results are not streamed token by token: messages-tuple gets them whole, as LangGraph's tool node sends them.
        if (wants("messages-tuple"))
          for (const m of added) if (m.role === "tool") await emit(out, "messages", [toLangChain(m), { ...meta(), langgraph_node: "tools" }]);
        if (wants("messages")) for (const m of added) await emit(out, "messages/complete", [toLangChain(m)]);
        if (wants("updates")) for (const u of updatesOf(added)) await emit(out, "updates", u);
        // As LangGraph's stream says it: the values end with the interrupt that stopped the run.
        const interrupt = interruptOf(after.channels.messages);
        if (wants("values")) await emit(out, "values", { ...valuesOf(after), ...(interrupt ? { __interrupt__: [interrupt] } : {}) });
      }),
    error: (out, e) =>
      serial(async () => {
        const { error } = streamErrorBody(e);
        await emit(out, "error", { error: error.code, message: error.message });
      }),
  };
}

function parsedOrEmpty(json: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(json);
    return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
