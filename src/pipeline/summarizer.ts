import type { Principal } from "../auth/principal";
import { callModel } from "../providers/call";
import { runWithFailover } from "../providers/failover";
import { routerFor } from "../routing/registry";
import { messageText, type Message } from "../thread/message";
import { estimateTokens } from "../memory/tokens";

const INSTRUCTIONS =
  "Summarize the conversation below for your own later reference. Keep names, facts, decisions, open questions and the user's preferences; drop pleasantries. Write plain sentences, no preamble.";

/**
 * The summarization middleware's model call: the router picks the cheapest model
 * that can hold the transcript (or the one named), with the usual failover.
 */
export function summarizerFor(deps: { env: Env; fetch?: typeof fetch }, _principal: Principal) {
  return async (messages: Message[], opts: { model?: string }): Promise<string> => {
    const transcript = messages
      .map((m) => `${m.role}${m.name ? ` (${m.name})` : ""}: ${messageText(m.content)}${m.tool_calls ? ` [called ${m.tool_calls.map((c) => c.function.name).join(", ")}]` : ""}`)
      .join("\n");
    const request = { messages: [{ role: "system" as const, content: INSTRUCTIONS }, { role: "user" as const, content: transcript }] };
    const route = routerFor(deps.env).resolve({
      content: transcript,
      model_override: opts.model,
      min_context_tokens: request.messages.reduce((n, m) => n + estimateTokens(m), 0),
    });
    const { value } = await runWithFailover(route.candidates, (m) => callModel(m, request, { env: deps.env, fetch: deps.fetch }));
    const text = value.message.content?.trim();
    if (!text) throw new Error("the summarizer returned no text");
    return text;
  };
}
