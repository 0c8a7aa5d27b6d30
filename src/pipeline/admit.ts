import { authorize, authorizeThread, resolveScopes } from "../auth/policy";
import { requireAgent } from "../routing/bundled";
import type { TurnInput } from "./turn";

/** What admission settled for the run: its memory layers, as text (they travel to the thread's object with the turn). */
export type Admission = { scopes: string[] };

/**
 * What a turn may do, asked once in the Worker before the turn is handed to its thread's object: the right to run,
 * the thread's reach, a known agent, memory layers within the caller's grants (BEM-022/023/025/041).
 * The rewrite right is asked in the object, where every rewrite the turn plans is known (prepare.ts planTurn).
 */
export function admitTurn(input: TurnInput): Admission {
  const { principal } = input;
  authorize(principal, "run");
  // The thread first (BEM-025), then the agent (BEM-041) and what it loads (BEM-023).
  if (input.threadId !== undefined) authorizeThread(principal, input.threadId, false);
  const agent = input.agentName !== undefined ? requireAgent(input.agentName) : undefined;
  const scopes = resolveScopes({ principal, sessionId: input.threadId, agentScopes: agent?.memory_scopes, requested: input.memoryScopes });
  return { scopes: scopes.map(String) };
}
