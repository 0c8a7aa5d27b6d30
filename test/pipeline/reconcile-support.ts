import { api } from "../support/tenants";

export type Msg = {
  role: "system" | "user" | "assistant" | "tool";
  content: string | null;
  tool_calls?: { id: string; type: "function"; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
};
type Stored = Msg & { id: string };

/** One chat turn on a thread; returns the reply message and the edgeweave summary. */
export const lookupTool = { type: "function", function: { name: "lookup", parameters: { type: "object", properties: { i: { type: "integer" } } } } };

export async function chat(
  key: string,
  thread: string,
  messages: Msg[],
  tools?: unknown[],
): Promise<{
  status: number;
  reply: Msg;
  edgeweave: { reconciled?: { matched: number; appended: number; branched_from: string | null }; checkpoint_id: string };
  error?: { code: string };
}> {
  const res = await api("/v1/chat/completions", { key, body: { model: "gpt-4o-mini", thread_id: thread, messages, ...(tools ? { tools } : {}) } });
  const body = (await res.json()) as { choices?: { message: Msg }[]; edgeweave?: never; error?: { code: string } };
  const m = body.choices?.[0]?.message;
  const reply: Msg = m
    ? {
        role: "assistant",
        content: m.content,
        ...(m.tool_calls ? { tool_calls: m.tool_calls.map((t) => ({ id: t.id, type: "function" as const, function: t.function })) } : {}),
      }
    : { role: "assistant", content: null };
  return { status: res.status, reply, edgeweave: body.edgeweave as never, error: body.error };
}

/** The thread's messages at its head, in a comparable form (ids and timestamps left out). */
export async function stored(key: string, thread: string): Promise<string[]> {
  const s = (await (await api(`/v1/threads/${thread}/state`, { key })).json()) as { channels: { messages: Stored[] } };
  return s.channels.messages.map((m) => `${m.role}|${m.content ?? ""}|${(m.tool_calls ?? []).map((t) => t.id).join(",")}|${m.tool_call_id ?? ""}`);
}
export const show = (ms: Msg[]) => ms.map((m) => `${m.role}|${m.content ?? ""}|${(m.tool_calls ?? []).map((t) => t.id).join(",")}|${m.tool_call_id ?? ""}`);
