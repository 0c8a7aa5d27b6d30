import { z } from "@hono/zod-openapi";
import { AppError } from "../../errors";
import { deleteOld } from "./delete-old";
import { promptTemplate } from "./dynamic-prompt";
import { filterToolNoise } from "./filter-tool-noise";
import { summarization } from "./summarization";
import { todoList } from "./todo-list";
import { trim } from "./trim";
import type { Middleware } from "./types";
import { describeIssues } from "../../zod-issues";

const count = z.number().int().positive();

/** One middleware entry of a models.yaml agent. Unknown keys are errors: a typo must not silently disable a setting. */
export const MiddlewareSpec = z.discriminatedUnion("name", [
  z.strictObject({
    name: z.literal("trim"),
    strategy: z.literal("last").default("last"),
    /** Defaults to the routed model's max_tokens. */
    max_tokens: count.optional(),
    include_system: z.boolean().default(true),
  }),
  z.strictObject({ name: z.literal("delete_old"), keep: count, keep_system: z.boolean().default(true) }),
  z.strictObject({
    name: z.literal("summarization"),
    trigger: z.union([
      z.strictObject({ messages: count }),
      z.strictObject({ tokens: count }),
      z.strictObject({ fraction: z.number().gt(0).lte(1) }),
    ]),
    keep: z.union([z.strictObject({ messages: count }), z.strictObject({ tokens: count })]).default({ messages: 20 }),
    model: z.string().min(1).max(128).optional(),
  }),
  z.strictObject({ name: z.literal("dynamic_prompt"), template: z.string().min(1).max(20_000) }),
  z.strictObject({ name: z.literal("todo_list") }),
  z.strictObject({ name: z.literal("filter_tool_noise") }),
]);
export type MiddlewareSpec = z.input<typeof MiddlewareSpec>;

/** Builds a shipped middleware from its config entry (bad entry → BEM-084). */
export function middlewareFromConfig(spec: unknown): Middleware {
  const parsed = MiddlewareSpec.safeParse(spec);
  if (!parsed.success) {
    throw new AppError("BEM-084", `Invalid middleware entry: ${describeIssues(parsed.error.issues, { root: "(entry)" })}`);
  }
  const s = parsed.data;
  switch (s.name) {
    case "trim":
      return trim({ ...(s.max_tokens ? { maxTokens: s.max_tokens } : {}), includeSystem: s.include_system });
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
  }
}

/** Builds an agent's middleware list; two entries with one name are a configuration error. */
export function middlewaresFromConfig(specs: readonly unknown[]): Middleware[] {
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
