import { MiddlewareSpec } from "../../config/middleware-spec";
import { AppError } from "../../core/errors";
import { deleteOld } from "./delete-old";
import { promptTemplate } from "./dynamic-prompt";
import { filterToolNoise } from "./filter-tool-noise";
import { summarization } from "./summarization";
import { todoList } from "./todo-list";
import { trim } from "./trim";
import type { Middleware } from "./types";
import { describeIssues } from "../../core/zod-issues";

/** Builds a shipped middleware from its config entry (bad entry → BEM-084). */
export function middlewareFromConfig(spec: unknown): Middleware {
  const parsed = MiddlewareSpec.safeParse(spec);
  if (!parsed.success) {
    throw new AppError("BEM-084", `Invalid middleware entry: ${describeIssues(parsed.error.issues, { root: "(entry)", input: spec })}`);
  }
  const s = parsed.data;
  switch (s.name) {
    case "trim":
      return trim({ ...(s.max_tokens ? { maxTokens: s.max_tokens } : {}), includeSystem: s.include_system, persist: s.persist });
    case "delete_old":
      return deleteOld({ keep: s.keep, keepSystem: s.keep_system });
    case "summarization":
      return summarization({ trigger: s.trigger, keep: s.keep, ...(s.model ? { model: s.model } : {}) });
    case "dynamic_prompt":
      return promptTemplate(s.template);
    case "todo_list":
      return todoList();
    case "filter_tool_noise":
      return filterToolNoise;
    case "human_in_the_loop":
      return { name: "human_in_the_loop", viewOnly: true, approvalTools: s.tools };
  }
}

/** Builds an agent's middleware list (models.yaml entries, parsed again by each build); two entries with one name are a configuration error. */
export function middlewaresFromConfig(specs: readonly MiddlewareSpec[]): Middleware[] {
  const out = specs.map((s, i) => {
    try {
      return middlewareFromConfig(s);
    } catch (e) {
      if (e instanceof AppError) throw new AppError("BEM-084", `middleware[${i}]: ${e.message}`);
      throw e;
    }
  });
  const names = new Set<string>();
  for (const m of out) {
    if (names.has(m.name)) throw new AppError("BEM-084", `Middleware '${m.name}' is listed twice`);
    names.add(m.name);
  }
  return out;
}
