import { authorizeThread } from "../auth/policy";
import { AppError } from "../core/errors";
import type { Principal } from "../core/principal";
import type { InputItem, ResolvedItem } from "../http/responses-schemas";
import { ThreadClient } from "../thread/client";
import type { OutputItem } from "./convert";
import { responseOfItem } from "./ids";

/**
 * Replaces every `item_reference` in a Responses input with the output item it names: a
 * message or function call of an earlier stored response (the AI SDK resends a stored
 * conversation this way). An item id names its response and thread (responses/ids.ts), so
 * each distinct response costs one read of its thread's object, after the thread check
 * (403 BEM-025); an id that names nothing the key reaches in its tenant is 404 BEM-110.
 */
export async function resolveReferences(env: Env, principal: Principal, input: string | readonly InputItem[]): Promise<string | ResolvedItem[]> {
  if (typeof input === "string") return input;
  const outputs = new Map<string, Promise<OutputItem[]>>();
  const outputOf = (responseId: string, threadId: string) => {
    let found = outputs.get(responseId);
    if (!found) {
      authorizeThread(principal, threadId, false);
      found = new ThreadClient(env, principal.tenant, threadId)
        .getResponse(responseId)
        .then((r) => (r ? ((JSON.parse(r.body) as { output?: OutputItem[] }).output ?? []) : []));
      outputs.set(responseId, found);
    }
    return found;
  };
  const out: ResolvedItem[] = [];
  for (const item of input) {
    if (item.type !== "item_reference") {
      out.push(item);
      continue;
    }
    const named = responseOfItem(item.id);
    const found = named ? (await outputOf(named.responseId, named.threadId)).find((o) => o.id === item.id) : undefined;
    if (!found) throw new AppError("BEM-110", `No stored output item '${item.id.slice(0, 120)}' to reference`);
    out.push(
      found.type === "message"
        ? { type: "message", id: found.id, role: "assistant", content: found.content.map((c) => ({ type: "output_text" as const, text: c.text })) }
        : { type: "function_call", id: found.id, call_id: found.call_id, name: found.name, arguments: found.arguments },
    );
  }
  return out;
}
