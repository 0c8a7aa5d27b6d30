import type { AgentConfig } from "../config/model-config";
import { AppError } from "../core/errors";
import { agentByName, agents, modelsCreatedAt } from "../routing/bundled";

/**
 * Every agent of models.yaml as a LangGraph assistant: its name is the `graph_id` (and the
 * assistant's name), its `assistant_id` a UUID derived from the name, so it is the same on every
 * deployment of the same models.yaml. Either one names the assistant, as LangGraph takes a graph id
 * where an assistant id goes.
 */
export type Assistant = ReturnType<typeof render>;

const ids = new Map<string, string>();

/** A UUID (version 8: custom) from the SHA-256 of the agent's name. */
async function uuidOf(name: string): Promise<string> {
  const known = ids.get(name);
  if (known) return known;
  const hash = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(`edgeweave-assistant:${name}`))).slice(0, 16);
  hash[6] = (hash[6]! & 0x0f) | 0x80;
  hash[8] = (hash[8]! & 0x3f) | 0x80;
  const hex = [...hash].map((b) => b.toString(16).padStart(2, "0")).join("");
  const id = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  ids.set(name, id);
  return id;
}

function render(agent: AgentConfig, id: string) {
  const at = new Date(modelsCreatedAt).toISOString();
  return {
    assistant_id: id,
    graph_id: agent.name,
    name: agent.name,
    description: agent.description ?? null,
    config: {},
    context: {},
    metadata: { created_by: "system", tags: agent.tags },
    version: 1,
    created_at: at,
    updated_at: at,
  };
}

export async function allAssistants(): Promise<Assistant[]> {
  return Promise.all(agents.map(async (a) => render(a, await uuidOf(a.name))));
}

/** The agent an assistant id or graph id names; 404 BEM-047 naming what is served. */
export async function requireAssistant(idOrName: string): Promise<{ agent: AgentConfig; assistant: Assistant }> {
  const byName = agentByName(idOrName);
  if (byName) return { agent: byName, assistant: render(byName, await uuidOf(byName.name)) };
  for (const a of agents) if ((await uuidOf(a.name)) === idOrName.toLowerCase()) return { agent: a, assistant: render(a, idOrName.toLowerCase()) };
  throw new AppError(
    "BEM-047",
    `No assistant '${idOrName.slice(0, 128)}': the assistants are the agents of models.yaml (${agents.map((a) => a.name).join(", ")}); pass an agent's name or its assistant_id`,
  );
}

const MESSAGES_SCHEMA = {
  type: "object",
  properties: { messages: { type: "array", items: { type: "object", description: "A message in LangChain's shape (type, content, id, tool_calls)" } } },
};

/** What GET /assistants/{id}/schemas answers: the state every agent keeps, and its context schema (models.yaml `context_schema`). */
export function schemasOf(agent: AgentConfig) {
  return {
    graph_id: agent.name,
    input_schema: MESSAGES_SCHEMA,
    output_schema: MESSAGES_SCHEMA,
    state_schema: MESSAGES_SCHEMA,
    config_schema: { type: "object", properties: {} },
    context_schema: agent.context_schema ?? { type: "object", properties: {} },
  };
}
