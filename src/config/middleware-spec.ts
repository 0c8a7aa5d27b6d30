import { z } from "@hono/zod-openapi";

const count = z.number().int().positive();

/** One middleware entry of a models.yaml agent. Unknown keys are errors: a typo must not silently disable a setting. */
export const MiddlewareSpec = z.discriminatedUnion("name", [
  z.strictObject({
    name: z.literal("trim"),
    strategy: z.literal("last").default("last"),
    /** Defaults to the routed model's max_tokens. */
    max_tokens: count.optional(),
    include_system: z.boolean().default(true),
    /** true: rewrite the stored thread to the trimmed list (needs rewrite_thread); default: trim only what the model sees. */
    persist: z.boolean().default(false),
  }),
  z.strictObject({ name: z.literal("delete_old"), keep: count, keep_system: z.boolean().default(true) }),
  z.strictObject({
    name: z.literal("summarization"),
    trigger: z.union([z.strictObject({ messages: count }), z.strictObject({ tokens: count }), z.strictObject({ fraction: z.number().gt(0).lte(1) })]),
    keep: z.union([z.strictObject({ messages: count }), z.strictObject({ tokens: count })]).default({ messages: 20 }),
    model: z.string().min(1).max(128).optional(),
  }),
  z.strictObject({ name: z.literal("dynamic_prompt"), template: z.string().min(1).max(20_000) }),
  z.strictObject({ name: z.literal("todo_list") }),
  z.strictObject({ name: z.literal("filter_tool_noise") }),
  // Calls to these server tools stop the run for a person's decision (approve, edit, reject), given on the next run.
  z.strictObject({
    name: z.literal("human_in_the_loop"),
    tools: z.array(z.string().min(1).max(128)).min(1).max(64),
  }),
]);
export type MiddlewareSpec = z.input<typeof MiddlewareSpec>;
