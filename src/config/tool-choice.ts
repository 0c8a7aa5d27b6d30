import type { z } from "zod";
import { SERVER_TOOL_NAMES } from "./tool-names";

/**
 * Tools a run adds itself, which a client may force with tool_choice without sending them: an agent's
 * server tools (models.yaml `tools:`) and the todo_list middleware's `write_todos`.
 */
const RUN_TOOLS: ReadonlySet<string> = new Set<string>([...SERVER_TOOL_NAMES, "write_todos"]);

/**
 * A request's client tools against its tool_choice (chat, Responses, Messages), before anything runs: two tools
 * of one name, or a tool_choice naming a tool not sent, is the request's mistake, so a 400 naming the tool (not a
 * provider's refusal the SDKs would retry). `chosen`: the tool a named tool_choice forces (undefined otherwise).
 */
export function checkToolChoice(
  names: readonly string[],
  chosen: string | undefined,
  ctx: z.RefinementCtx,
  at: { tools: string; nameIn: (string | number)[]; choice: (string | number)[] },
): void {
  const seen = new Set<string>();
  names.forEach((name, i) => {
    if (seen.has(name))
      ctx.addIssue({ code: "custom", path: [at.tools, i, ...at.nameIn], message: `two tools are named '${name.slice(0, 128)}'; tool names must be unique` });
    seen.add(name);
  });
  if (chosen === undefined || seen.has(chosen) || RUN_TOOLS.has(chosen)) return;
  const sent = names.length > 0 ? `, which is not one of the request's tools (${[...seen].slice(0, 8).join(", ")})` : ", but the request sends no tools";
  ctx.addIssue({ code: "custom", path: at.choice, message: `tool_choice names '${chosen.slice(0, 128)}'${sent}` });
}
