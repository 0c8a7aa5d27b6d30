import { authorize, authorizeThread, resolveScopes } from "../auth/policy";
import { requireAgent } from "../routing/bundled";
import { middlewaresFromConfig } from "./middleware/from-config";
import type { TurnInput } from "./turn";

/** What admission settled for the run: its memory layers, as text (they travel to the thread's object with the turn). */
export type Admission = { scopes: string[] };

/**
 * Every authorization question a turn asks, asked once, in the Worker, before anything is read or
 * the turn is handed to its thread's object: the right to run, the thread's reach, the rewrite right
 * when the request (`checkpoint_id`) or its agent's middleware rewrites stored history, a known agent,
 * memory layers within the caller's grants (BEM-022/023/025/041). Rewrites decided later, inside the
 * object — a resend that branches or empties the head, a `previous_response_id` older than the head —
 * are checked where they are decided (object-run.ts, reconcile.ts).
 */
export function admitTurn(input: TurnInput): Admission {
  const { principal } = input;
  authorize(principal, "run");
  // The thread first (BEM-025), then the agent (BEM-041) and what it loads (BEM-023).
  if (input.threadId !== undefined) authorizeThread(principal, input.threadId, input.checkpointId !== undefined);
  const agent = input.agentName !== undefined ? requireAgent(input.agentName) : undefined;
  // An agent whose middleware replaces or removes stored messages needs the same right as POST …/state and /fork.
  if (input.threadId !== undefined && middlewaresFromConfig(agent?.middleware ?? []).some((m) => m.rewritesHistory === true))
    authorizeThread(principal, input.threadId, true);
  const scopes = resolveScopes({ principal, sessionId: input.threadId, agentScopes: agent?.memory_scopes, requested: input.memoryScopes });
  return { scopes: scopes.map(String) };
}
