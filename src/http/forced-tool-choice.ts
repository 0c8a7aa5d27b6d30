import { fail } from "../core/errors";
import { middlewareTools } from "../pipeline/middleware/compose";
import { middlewaresFromConfig } from "../pipeline/middleware/from-config";
import { serverToolsFor } from "../pipeline/server-tools";
import type { TurnInput } from "../pipeline/turn";
import { agentByName } from "../routing/bundled";

/** The tools a named agent adds to the run (its server tools and its middleware's, e.g. `write_todos`), as the run resolves them. */
function agentToolNames(agentName: string): readonly string[] {
  const agent = agentByName(agentName);
  // An unknown agent is refused by admission (BEM-047, after the key's right to run): not decided here.
  if (!agent) return [];
  return middlewareTools(middlewaresFromConfig(agent.middleware ?? []), serverToolsFor(agent)).map((t) => t.name);
}

/**
 * A tool_choice that forces a call (chat's and Responses' `required`, Messages' `any`, or a named tool) on a
 * run with nothing to call: no tools in the request and none its agent brings. A provider is sent no
 * tool_choice without tools, so the answer came back as text, as if the choice had been `auto` — also when
 * an agent was named that has no tools (`support`). A named tool the request does not send must be one of
 * the agent's: a provider refuses a tool_choice naming a tool it is not sent (a 502 the SDKs retry).
 */
export function refuseForcedCallWithoutTools(turn: TurnInput): void {
  const choice = turn.params?.tool_choice;
  if (choice === undefined || choice === "auto" || choice === "none") return;
  const clientTools = (turn.params?.tools ?? []).map((t) => t.function.name);
  const named = typeof choice === "string" ? undefined : choice.function.name;
  if (named === undefined ? clientTools.length > 0 : clientTools.includes(named)) return;
  const agentTools = turn.agentName !== undefined ? agentToolNames(turn.agentName) : [];
  if (named === undefined ? agentTools.length > 0 : agentTools.includes(named)) return;
  const forced = named === undefined ? "'required' ('any' on /v1/messages)" : `the tool '${named.slice(0, 64)}'`;
  const agent = turn.agentName?.slice(0, 64);
  const agentPart =
    agent === undefined
      ? " (nor names an agent with tools of its own)"
      : agentTools.length === 0
        ? `, and agent '${agent}' has no tools of its own`
        : `, nor is it one of the tools of agent '${agent}' (${agentTools.slice(0, 8).join(", ")})`;
  const sent = clientTools.length === 0 ? "the request sends no tools" : "the request does not send it";
  fail("BEM-011", `tool_choice: ${forced} forces a tool call, but ${sent}${agentPart}`);
}
