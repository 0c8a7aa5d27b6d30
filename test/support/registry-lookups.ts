/** Lookups over the bundled models.yaml that only tests need (the worker uses src/routing/registry.ts). */
import { agents, models } from "../../src/routing/registry";
import { compiled } from "../../src/routing/models.generated";

export const defaultModel = models.find((m) => m.name === compiled.defaultModel) ?? null;
export const agentByName = (name: string) => agents.find((a) => a.name === name);
