import { decide } from "../auth/policy";
import type { AgentConfig } from "../config/model-config";
import type { Principal } from "../core/principal";
import { MemoryScope } from "../memory/scope";
import { resolveTarget } from "../providers/call";
import { routerFor } from "../routing/bundled";

/**
 * Why the agent's background fact extraction after this turn cannot run, said in the turn's warnings
 * (else the task failed later, seen only in the log and the dead-letter queue); undefined when it can.
 * The same checks the task makes first: the key may write the scope, and a model can be called.
 */
export function extractionWarning(env: object, run: { agent?: AgentConfig; principal: Principal; threadId?: string }): string | undefined {
  const config = run.agent?.extract;
  if (!config || run.threadId === undefined || run.principal.kind === "operator") return undefined;
  const what = `fact extraction of agent '${run.agent!.name}'`;
  const scope = config.scope === "session" ? MemoryScope.session(run.threadId) : MemoryScope.parse(config.scope);
  const may = decide(run.principal, "write_scope", { scope });
  if (!may.allow) return `${what} will store nothing: this key may not write '${scope}'`;
  let why = "";
  try {
    const route = routerFor(env).resolve({ content: null, ...(config.model ? { model_override: config.model } : {}) });
    for (const m of route.candidates) {
      try {
        resolveTarget(m, env);
        return undefined;
      } catch (e) {
        why ||= e instanceof Error ? e.message : String(e);
      }
    }
  } catch (e) {
    why = e instanceof Error ? e.message : String(e);
  }
  return `${what} cannot run: ${why}`;
}
