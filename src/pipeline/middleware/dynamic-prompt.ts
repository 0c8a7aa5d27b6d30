import { z } from "@hono/zod-openapi";
import { AppError } from "../../core/errors";
import type { AgentState } from "../state";
import type { Runtime } from "../runtime";
import type { Middleware } from "./types";

/**
 * The system prompt of each model call, computed from state and the per-run
 * context. It applies to the model call only: the thread stores the
 * conversation, not the prompt, so a prompt change never rewrites history.
 */
export function dynamicPrompt(prompt: (state: AgentState, runtime: Runtime) => string, contextSchema?: z.ZodType<Record<string, unknown>>): Middleware {
  return {
    name: "dynamic_prompt",
    ...(contextSchema ? { contextSchema } : {}),
    modelRequest: (request, state, runtime) => ({ ...request, system: prompt(state, runtime) }),
  };
}

const PLACEHOLDER = /\{\{\s*(state\.)?([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g;
const ContextValue = z.union([z.string(), z.number(), z.boolean()]);

/**
 * A prompt template: `{{name}}` reads the per-run context (required: a run
 * without it is a BEM-083), `{{state.name}}` reads a state channel (empty when
 * unset).
 */
export function promptTemplate(template: string): Middleware {
  const fromContext = new Set<string>();
  for (const match of template.matchAll(PLACEHOLDER)) if (!match[1]) fromContext.add(match[2]!);
  if (template.replace(PLACEHOLDER, "").includes("{{")) {
    throw new AppError("BEM-084", "dynamic_prompt template has a placeholder that is not {{name}} or {{state.name}}");
  }
  const schema = z.looseObject(Object.fromEntries([...fromContext].map((k) => [k, ContextValue])));
  return dynamicPrompt(
    (state, runtime) =>
      template.replace(PLACEHOLDER, (_all, isState: string | undefined, key: string) => {
        const value = isState ? state[key] : runtime.context[key];
        if (value === undefined || value === null) return "";
        return typeof value === "object" ? JSON.stringify(value) : String(value);
      }),
    schema as z.ZodType<Record<string, unknown>>,
  );
}
