import { AppError } from "../errors";
import type { AgentConfig } from "../routing/model-config";
import { getLastUserMessage, setUserName } from "./tools/builtin";
import type { Tool } from "./tools/define";
import { MEMORY_TOOLS } from "./tools/memory-tools";

/** Server-side tools an agent may list by name in models.yaml (middleware install their own). */
export const SERVER_TOOLS: ReadonlyMap<string, Tool> = new Map([getLastUserMessage, setUserName, ...MEMORY_TOOLS].map((t) => [t.name, t]));

export function serverToolsFor(agent: AgentConfig | undefined): Tool[] {
  return (agent?.tools ?? []).map((name) => {
    const tool = SERVER_TOOLS.get(name);
    if (!tool) throw new AppError("BEM-084", `Agent '${agent?.name}' lists unknown tool '${name}'`);
    return tool;
  });
}
