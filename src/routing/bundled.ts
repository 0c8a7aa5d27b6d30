/**
 * The bundled model list (compiled from models.yaml at build time) and the
 * router built from it, once per isolate and env.
 */
import type { AgentConfig, ModelConfig } from "../config/model-config";
import { closestNames } from "../core/closest-names";
import { AppError } from "../core/errors";
import { ModelNames } from "./aliases";
import { compiled } from "./models.generated";
import { ModelRouter } from "./router";

export const models: readonly ModelConfig[] = compiled.models;
export const agents: readonly AgentConfig[] = compiled.agents;
export const modelsCreatedAt: number = compiled.created;

const modelNames = new ModelNames(models);
const agentMap = new Map(agents.map((a) => [a.name, a]));

/** The model a configured name or one of its aliases (models.yaml `aliases`) stands for. */
export const modelByName = (name: string): ModelConfig | undefined => modelNames.lookup(name);
export const agentByName = (name: string): AgentConfig | undefined => agentMap.get(name);

/** The agent, or BEM-047 naming the closest configured agents (as an unknown model names models). */
export function requireAgent(name: string): AgentConfig {
  const a = agentMap.get(name);
  if (!a)
    throw new AppError(
      "BEM-047",
      `Unknown agent "${name.slice(0, 128)}". Closest configured: ${closestNames(
        name,
        agents.map((x) => x.name),
      ).join(", ")} (agents are defined in models.yaml)`,
    );
  return a;
}

/** A secret counts as set when it is a non-empty string. */
function secretSet(env: object, name: string): boolean {
  const v: unknown = (env as Record<string, unknown>)[name];
  return typeof v === "string" && v.trim() !== "";
}

// env is the same object for every request of an isolate, so this builds each router once.
const routers = new WeakMap<object, ModelRouter>();

/**
 * The router for this deployment: offline models only when
 * EDGEWEAVE_OFFLINE === "1"; models whose api_key_env secret is unset are
 * skipped by automatic routing (naming one explicitly still works; the
 * provider then reports BEM-070).
 */
export function routerFor(env: object): ModelRouter {
  let r = routers.get(env);
  if (!r) {
    r = new ModelRouter(models, compiled.defaultModel, {
      allowOffline: (env as { EDGEWEAVE_OFFLINE?: unknown }).EDGEWEAVE_OFFLINE === "1",
      isAvailable: (m) => {
        const secret = m.provider_config.api_key_env;
        return secret === undefined || secretSet(env, secret) ? true : `secret ${secret} is not set`;
      },
    });
    routers.set(env, r);
  }
  return r;
}
