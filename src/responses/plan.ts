import { authorizeThread } from "../auth/policy";
import { budgetTags } from "../budgets/tags";
import type { Principal } from "../core/principal";
import { AppError } from "../core/errors";
import type { Timings } from "../pipeline/timings";
import type { TurnInput } from "../pipeline/turn";
import { ThreadClient } from "../thread/client";
import { parseThreadId } from "../thread/thread-id";
import type { Message, ParsedMessageInput } from "../core/message";
import type { ResponseCreateRequest } from "../edge/responses-schemas";
import { callIdsOf, inputToMessages, outputCallIds, toChatParams, unansweredCallIds } from "./convert";
import { threadOfResponse } from "./ids";
import { resolveInput } from "./references";
import { requireConversation, requireResponse } from "./store";
import { randomHex } from "../core/encoding";

/** How a Responses request maps onto a turn: which thread, from which checkpoint, saved or not. */
export type ResponsePlan = {
  turn: TurnInput;
  store: boolean;
  /** The conversation named by the request (returned as `conversation`). */
  conversationId: string | null;
  previousResponseId: string | null;
  /** The request's items as thread messages (instructions excluded): the response's input items. */
  input: ParsedMessageInput[];
};

export const newThreadId = () => `thr_${randomHex()}`;

const asInput = (m: Message): ParsedMessageInput => ({
  role: m.role,
  content: m.content,
  ...(m.name !== undefined ? { name: m.name } : {}),
  ...(m.tool_calls !== undefined ? { tool_calls: m.tool_calls } : {}),
  ...(m.tool_call_id !== undefined ? { tool_call_id: m.tool_call_id } : {}),
});

/** A response stored in its thread's object; the thread's grant is checked before anything is read. */
async function storedResponse(env: Env, principal: Principal, threadId: string, id: string): Promise<PreviousResponse> {
  authorizeThread(principal, threadId, false);
  const rec = await new ThreadClient(env, principal.tenant, threadId).getResponse(id);
  if (!rec) throw new AppError("BEM-100", `No response '${id.slice(0, 80)}'`);
  return { thread_id: threadId, checkpoint_id: rec.checkpoint_id, call_ids: rec.call_ids };
}

/** A D1 record of a response stored before ids named their thread; its thread's grant is checked once it is known. */
async function legacyResponse(env: Env, principal: Principal, id: string): Promise<PreviousResponse> {
  const rec = await requireResponse(env.DB, principal.tenant, id);
  authorizeThread(principal, rec.thread_id, false);
  return {
    thread_id: rec.thread_id,
    checkpoint_id: rec.checkpoint_id,
    call_ids: outputCallIds((rec.body.output ?? []) as { type?: string; call_id?: string }[]),
  };
}

type PreviousResponse = { thread_id: string; checkpoint_id: string; call_ids: string[] };

function checkCalls(unanswered: string[], known: Set<string>): void {
  const unknown = unanswered.filter((id) => !known.has(id));
  if (unknown.length > 0)
    throw new AppError("BEM-101", `function_call_output for unknown call_id '${unknown[0]!.slice(0, 80)}': no earlier function_call made it`);
}

/**
 * A response is a checkpoint of a thread:
 * - previous_response_id at the thread's head continues the thread; an older one continues as a new branch
 *   (decided in the thread's object, which knows its head: one round trip; a branch needs rewrite_thread);
 * - conversation names the thread (continued at its head);
 * - X-Thread-Id names the thread as on chat (with either of the above it must be theirs, else BEM-103);
 * - input naming a stored response's items (item_reference, an aliased call_id) continues that response's thread;
 * - none: a new thread (the key must reach it, as chat on a new thread_id); store:false: runs
 *   statelessly over the same history and saves nothing (reading that history needs the thread's reach).
 * All lookups are bound to the caller's tenant (another tenant's id is BEM-100/102), and every
 * thread read or continued is checked against the key's grants before it is touched (BEM-025).
 */
export async function planResponse(
  env: Env,
  principal: Principal,
  timings: Timings,
  body: ResponseCreateRequest,
  opts: { bookmark?: string; threadHeader?: string } = {},
): Promise<ResponsePlan> {
  if (principal.kind !== "tenant") throw new AppError("BEM-022", "Runs need a tenant key; the operator key manages tenants");
  const { bookmark } = opts;
  const tenant = principal.tenant;
  const store = body.store !== false;
  const conversationId = body.conversation == null ? null : typeof body.conversation === "string" ? body.conversation : body.conversation.id;
  const previousResponseId = body.previous_response_id ?? null;
  if (conversationId !== null && previousResponseId !== null) throw new AppError("BEM-103", "Pass previous_response_id or conversation, not both");
  // X-Thread-Id names the thread as on chat; beside a conversation or a previous response it must name theirs.
  const header = opts.threadHeader === undefined ? null : parseThreadId(opts.threadHeader);
  const sameThread = (threadId: string, what: string) => {
    if (header !== null && header !== threadId)
      throw new AppError("BEM-103", `X-Thread-Id '${header.slice(0, 80)}' names another thread than the ${what}; send one of them, or the same thread`);
  };
  if (conversationId !== null) sameThread(conversationId, "conversation");

  const resolved = await resolveInput(env, principal, body.input);
  const messages = inputToMessages(resolved.items, body.instructions);
  const input = messages.filter((m) => m.role !== "system");
  const base: TurnInput = {
    principal,
    timings,
    ...(bookmark !== undefined ? { bookmark } : {}),
    agentName: body.agent,
    messages,
    model: body.model,
    capabilities: body.capabilities,
    memoryScopes: body.memory_scopes,
    context: body.context,
    params: toChatParams(body),
    // A response echoes (and keeps) all its metadata: the declared keys are also budget tags.
    budgetTags: budgetTags(body.metadata, { stored: true }),
    ...(body.truncation === "disabled" ? { truncation: "disabled" as const } : {}),
    ...(body.max_tool_calls != null ? { maxToolCalls: body.max_tool_calls } : {}),
  };
  const unanswered = unansweredCallIds(messages);
  const plan = (turn: Partial<TurnInput>): ResponsePlan => ({
    turn: { ...base, ...turn },
    store,
    conversationId,
    previousResponseId,
    input,
  });

  if (previousResponseId !== null) {
    const threadId = threadOfResponse(previousResponseId);
    // A stored turn continuing a response that names its thread is settled in that thread's object, under the run's lease: no lookup here.
    if (threadId !== null) sameThread(threadId, "previous response's");
    if (threadId !== null && store) {
      authorizeThread(principal, threadId, false);
      return plan({ threadId, responses: { previousResponse: { id: previousResponseId, answers: unanswered } } });
    }
    const prev =
      threadId !== null ? await storedResponse(env, principal, threadId, previousResponseId) : await legacyResponse(env, principal, previousResponseId);
    sameThread(prev.thread_id, "previous response's");
    checkCalls(unanswered, new Set(prev.call_ids));
    if (!store) {
      const state = await new ThreadClient(env, tenant, prev.thread_id).getState(prev.checkpoint_id);
      return plan({ messages: [...state.channels.messages.map(asInput), ...messages] });
    }
    return plan({ threadId: prev.thread_id, responses: { continueFrom: prev.checkpoint_id } });
  }
  if (conversationId !== null) {
    // The grant first: a conversation outside it is 403 whether or not it exists.
    authorizeThread(principal, parseThreadId(conversationId), false);
    // Input on a conversation is reconciled with the thread like a chat resend, and the conversation's
    // existence checked, both in the thread's object: a stored turn costs no lookups here.
    if (store && unanswered.length === 0) return plan({ threadId: conversationId, resent: true, responses: { conversation: true } });
    await requireConversation(env.DB, tenant, conversationId);
    const thread = new ThreadClient(env, tenant, conversationId);
    if (unanswered.length > 0) {
      const recent = await thread.loadRecent(Number.MAX_SAFE_INTEGER, { maxMessages: 64 });
      checkCalls(unanswered, callIdsOf(recent.messages));
    }
    if (!store) {
      const state = await thread.getState();
      return plan({ messages: [...state.channels.messages.map(asInput), ...messages] });
    }
    return plan({ threadId: conversationId, resent: true, responses: { conversation: true } });
  }
  if (header !== null) {
    // A thread named as on chat: created by its first turn, continued after; a resend is reconciled like chat's.
    authorizeThread(principal, header, false);
    if (store) return plan({ threadId: header, resent: true });
    const state = await new ThreadClient(env, tenant, header).getState();
    checkCalls(unanswered, callIdsOf(state.channels.messages));
    return plan({ messages: [...state.channels.messages.map(asInput), ...messages] });
  }
  // Input that names a stored response's items (an item_reference, or a call_id a stored response returned)
  // belongs to that response's thread: the AI SDK's tool loop continues it without naming it otherwise.
  if (resolved.threads.length > 1)
    throw new AppError("BEM-103", "The input names items of more than one thread; continue one of them (conversation or previous_response_id)");
  const named = resolved.threads[0];
  if (named !== undefined && store) return plan({ threadId: named, resent: true });
  checkCalls(unanswered, new Set());
  return plan(store ? { threadId: newThreadId(), responses: { oneOff: true } } : {});
}
