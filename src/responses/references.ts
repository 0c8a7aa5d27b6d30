import { authorizeThread } from "../auth/policy";
import { AppError } from "../core/errors";
import type { Principal } from "../core/principal";
import type { InputItem, ResolvedItem } from "../edge/responses-schemas";
import { ThreadClient } from "../thread/client";
import type { OutputItem } from "./convert";
import { callOfItem, responseOfItem } from "./ids";

/**
 * Replaces every `item_reference` in a Responses input with the output item it names: a
 * message or function call of an earlier stored response (the AI SDK resends a stored
 * conversation this way). An item id names its response and thread (responses/ids.ts), so
 * each distinct response costs one read of its thread's object, after the thread check
 * (403 BEM-025); an id that names nothing the key reaches in its tenant is 404 BEM-110.
 * A call_id that is a stored function call's id (what a stored response returns as call_id,
 * convert.ts replyToOutput) is replaced by the provider's id the thread holds, the same way.
 * `threads`: the threads the input named so, in order (a request naming none of its own belongs to them).
 */
export async function resolveInput(
  env: Env,
  principal: Principal,
  input: string | readonly InputItem[],
): Promise<{ items: string | ResolvedItem[]; threads: string[] }> {
  if (typeof input === "string") return { items: input, threads: [] };
  const records = new Map<string, Promise<{ output: OutputItem[]; callIds: string[] }>>();
  const threads = new Set<string>();
  const recordOf = (responseId: string, threadId: string) => {
    let found = records.get(responseId);
    if (!found) {
      authorizeThread(principal, threadId, false);
      threads.add(threadId);
      found = new ThreadClient(env, principal.tenant, threadId)
        .getResponse(responseId)
        .then((r) => (r ? { output: (JSON.parse(r.body) as { output?: OutputItem[] }).output ?? [], callIds: r.call_ids } : { output: [], callIds: [] }));
      records.set(responseId, found);
    }
    return found;
  };
  /** The provider's id behind a stored call's aliased call_id; any other call_id as it is. */
  const providerCallId = async (callId: string): Promise<string> => {
    const named = callOfItem(callId);
    if (!named) return callId;
    const id = (await recordOf(named.responseId, named.threadId)).callIds[named.index];
    if (id === undefined) throw new AppError("BEM-110", `No stored function call '${callId.slice(0, 120)}' to answer`);
    return id;
  };
  const out: ResolvedItem[] = [];
  for (const item of input) {
    if (item.type === "function_call" || item.type === "function_call_output") {
      out.push({ ...item, call_id: await providerCallId(item.call_id) });
      continue;
    }
    if (item.type !== "item_reference") {
      out.push(item);
      continue;
    }
    const named = responseOfItem(item.id);
    const found = named ? (await recordOf(named.responseId, named.threadId)).output.find((o) => o.id === item.id) : undefined;
    if (!found) throw new AppError("BEM-110", `No stored output item '${item.id.slice(0, 120)}' to reference`);
    out.push(
      found.type === "message"
        ? { type: "message", id: found.id, role: "assistant", content: found.content.map((c) => ({ type: "output_text" as const, text: c.text })) }
        : { type: "function_call", id: found.id, call_id: await providerCallId(found.call_id), name: found.name, arguments: found.arguments },
    );
  }
  return { items: out, threads: [...threads] };
}

/** resolveInput's items alone (conversation items: their thread is named by the route). */
export async function resolveReferences(env: Env, principal: Principal, input: string | readonly InputItem[]): Promise<string | ResolvedItem[]> {
  return (await resolveInput(env, principal, input)).items;
}
