import { z } from "@hono/zod-openapi";
import { CacheControl, Citations, SERVER_TOOL_BLOCKS, ServerToolBlock } from "../core/message";
import { RequestedScopes } from "../edge/chat-schemas";
import { checkToolChoice } from "../config/tool-choice";
import { MIN_THINKING_BUDGET } from "../providers/anthropic";

/**
 * Anthropic's Messages API request (POST /v1/messages), as the official SDKs and Claude Code send
 * it, plus edgeweave's extensions (thread_id, agent, memory_scopes, capabilities, context).
 * Top-level fields not listed here are kept and passed through to an Anthropic upstream unchanged
 * (to.ts), so a new API field does not need a release of ours.
 */
const Cache = { cache_control: CacheControl.optional() };

/** `citations` kept (Anthropic's SDKs send back a reply's text blocks with theirs, `null` when none). */
export const TextBlock = z.looseObject({ type: z.literal("text"), text: z.string(), citations: Citations.nullable().optional(), ...Cache });
const ImageSource = z.discriminatedUnion("type", [
  z.object({ type: z.literal("base64"), media_type: z.string().max(64), data: z.string() }),
  z.object({ type: z.literal("url"), url: z.url({ protocol: /^https?$/ }).max(8192) }),
]);
export const ImageBlock = z.object({ type: z.literal("image"), source: ImageSource, ...Cache });
export const DocumentBlock = z.looseObject({ type: z.literal("document"), source: z.looseObject({ type: z.string().max(32) }), ...Cache });
export const ThinkingBlock = z.object({ type: z.literal("thinking"), thinking: z.string(), signature: z.string() });
export const RedactedThinkingBlock = z.object({ type: z.literal("redacted_thinking"), data: z.string() });
export const ToolUseBlock = z.object({
  type: z.literal("tool_use"),
  id: z.string().min(1).max(256),
  name: z.string().min(1).max(128),
  input: z.record(z.string(), z.unknown()),
  ...Cache,
});
const ToolResultContent = z.discriminatedUnion("type", [TextBlock, ImageBlock, DocumentBlock]);
export const ToolResultBlock = z.object({
  type: z.literal("tool_result"),
  tool_use_id: z.string().min(1).max(256),
  content: z.union([z.string(), z.array(ToolResultContent).max(1000)]).optional(),
  is_error: z.boolean().optional(),
  ...Cache,
});
export const ContentBlock = z.discriminatedUnion("type", [
  TextBlock,
  ImageBlock,
  DocumentBlock,
  ThinkingBlock,
  RedactedThinkingBlock,
  ToolUseBlock,
  ToolResultBlock,
  ServerToolBlock,
]);
export type ContentBlock = z.infer<typeof ContentBlock>;

/** The block types above: a block of another type is one Anthropic added after this release. */
export const KNOWN_BLOCK_TYPES: ReadonlySet<string> = new Set([
  ...[TextBlock, ImageBlock, DocumentBlock, ThinkingBlock, RedactedThinkingBlock, ToolUseBlock, ToolResultBlock].map((b) => b.shape.type.value),
  ...SERVER_TOOL_BLOCKS,
]);
/**
 * A block of a type new to us in an assistant turn (a server tool Anthropic added after this release):
 * Anthropic's reply had it, a stateless client sends it back. Kept whole like a server-tool block; its
 * type must be a plain name. A known type never reads as one, so a malformed known block gets that
 * block's own errors: the known-type miss is reported as a tag miss, which core/zod-issues.ts ranks
 * below the known block's issues.
 */
export const UnknownBlock = z.looseObject({
  type: z
    .string()
    .regex(/^[a-z][a-z0-9_]{0,63}$/, {
      error: `Invalid block type: expected ${[...KNOWN_BLOCK_TYPES].map((t) => `'${t}'`).join(" | ")}, or a type new to us named ^[a-z][a-z0-9_]{0,63}$`,
    })
    .superRefine((type, ctx) => {
      if (KNOWN_BLOCK_TYPES.has(type))
        ctx.addIssue({ code: "invalid_value", values: ["a block type new to us"], input: type, message: "a known block type", continue: false });
    }),
});
/** An assistant turn's block: a known one, or one of a type new to us. */
export const AssistantBlock = z.union([ContentBlock, UnknownBlock]);
export type AssistantBlock = z.infer<typeof AssistantBlock>;
export const isKnownBlock = (b: AssistantBlock): b is ContentBlock => KNOWN_BLOCK_TYPES.has(b.type);

/**
 * `system` inside `messages`: Claude Code sends per-turn instructions that way (a beta of Anthropic's
 * API); like chat's system messages they are instructions for this call, not stored turns.
 */
const UserContent = z.union([z.string(), z.array(ContentBlock).max(10_000)]);
export const MessageParam = z.discriminatedUnion("role", [
  // A user's content is what we must understand: a block type we do not know is a 400 there.
  z.object({ role: z.literal("user"), content: UserContent }),
  z.object({ role: z.literal("assistant"), content: z.union([z.string(), z.array(AssistantBlock).max(10_000)]) }),
  z.object({ role: z.literal("system"), content: UserContent }),
]);
export type MessageParam = z.infer<typeof MessageParam>;

/** A client tool (type absent or "custom"); any other type is an Anthropic server tool, passed through to Anthropic only. */
export const Tool = z.looseObject({
  type: z.string().max(64).optional(),
  name: z.string().min(1).max(128),
  description: z.string().max(100_000).optional(),
  input_schema: z.record(z.string(), z.unknown()).optional(),
  ...Cache,
});

export const ToolChoice = z.discriminatedUnion("type", [
  z.object({ type: z.literal("auto"), disable_parallel_tool_use: z.boolean().optional() }),
  z.object({ type: z.literal("any"), disable_parallel_tool_use: z.boolean().optional() }),
  z.object({ type: z.literal("tool"), name: z.string().min(1), disable_parallel_tool_use: z.boolean().optional() }),
  z.object({ type: z.literal("none") }),
]);

const ThreadIdField = z.string().min(1).max(512).openapi({ description: "edgeweave: the thread this conversation is kept in (or X-Thread-Id)" });

const MessagesFields = z.looseObject({
  model: z.string().min(1).max(256).openapi({ description: "A configured model name or alias (models.yaml `aliases`), or `auto` to route", example: "auto" }),
  max_tokens: z.number().int().positive().openapi({ description: "Clamped to the routed model's max_output_tokens (with a warning)" }),
  messages: z.array(MessageParam).min(1).max(100_000),
  system: z.union([z.string(), z.array(TextBlock).max(1000)]).optional(),
  tools: z.array(Tool).max(1000).optional(),
  tool_choice: ToolChoice.optional(),
  stop_sequences: z.array(z.string()).max(64).optional(),
  temperature: z.number().min(0).max(1).optional(),
  top_p: z.number().min(0).max(1).optional(),
  top_k: z.number().int().min(0).optional(),
  metadata: z.looseObject({ user_id: z.string().max(512).nullable().optional() }).optional(),
  thinking: z.looseObject({ type: z.string().max(32) }).optional(),
  stream: z.boolean().optional(),
  // edgeweave's extensions (docs/guides/anthropic-and-claude-code.md).
  thread_id: ThreadIdField.optional(),
  agent: z.string().min(1).max(64).optional(),
  memory_scopes: RequestedScopes.optional(),
  capabilities: z.array(z.string().min(1).max(64)).max(32).optional(),
  context: z.record(z.string(), z.unknown()).optional(),
});

/** Client tools and server tools share one name space at Anthropic; a `tool` choice may force either. */
const checkTools = (b: { tools?: { name: string }[]; tool_choice?: z.infer<typeof ToolChoice> }, ctx: z.RefinementCtx) =>
  checkToolChoice(
    (b.tools ?? []).map((t) => t.name),
    b.tool_choice?.type === "tool" ? b.tool_choice.name : undefined,
    ctx,
    { tools: "tools", nameIn: ["name"], choice: ["tool_choice", "name"] },
  );

/**
 * Anthropic refuses `thinking.budget_tokens` below 1,024 or not below `max_tokens`. Such a request went on, and
 * to an Anthropic model the budget was shrunk, or thinking left off, without a word (that is for the clamp to a
 * model's max_output_tokens alone, which the client did not ask for): a 400 naming the field, as Anthropic's.
 */
function checkThinking(b: { max_tokens: number; thinking?: { type: string; budget_tokens?: unknown } }, ctx: z.RefinementCtx): void {
  const budget = b.thinking?.type === "enabled" ? b.thinking.budget_tokens : undefined;
  if (typeof budget !== "number") return;
  if (budget < MIN_THINKING_BUDGET) ctx.addIssue({ code: "custom", path: ["thinking", "budget_tokens"], message: `must be at least ${MIN_THINKING_BUDGET}` });
  else if (budget >= b.max_tokens)
    ctx.addIssue({ code: "custom", path: ["thinking", "budget_tokens"], message: `must be less than max_tokens (${b.max_tokens})` });
}

export const MessagesRequest = MessagesFields.superRefine((b, ctx) => {
  checkTools(b, ctx);
  checkThinking(b, ctx);
}).openapi("AnthropicMessagesRequest");
export type MessagesRequest = z.infer<typeof MessagesRequest>;

/** The fields above: everything else a client sends is passed through to Anthropic as it came. */
export const KNOWN_FIELDS = new Set(Object.keys(MessagesFields.shape));
/** Our own extensions, never sent upstream. */
export const EXTENSION_FIELDS = new Set(["thread_id", "agent", "memory_scopes", "capabilities", "context"]);

/**
 * count_tokens counts the request as sent (docs/guides/anthropic-and-claude-code.md: an estimate of it). edgeweave's body extensions name a
 * thread, agent or memory to load, which it never loads: they were accepted and did nothing, so a count
 * that looked like what the model would see left out the thread and its facts. Each is a 400 naming it.
 * (Headers such as X-Thread-Id are ignored: Claude Code sends its custom headers on every call.)
 */
export const CountTokensRequest = MessagesFields.omit({
  max_tokens: true,
  stream: true,
  thread_id: true,
  agent: true,
  memory_scopes: true,
  capabilities: true,
  context: true,
})
  .superRefine((b, ctx) => {
    checkTools(b, ctx);
    for (const field of EXTENSION_FIELDS)
      if (field in b)
        ctx.addIssue({
          code: "custom",
          path: [field],
          message: "count_tokens counts the request as sent and loads no thread, agent or memory; leave it out",
        });
  })
  .openapi("AnthropicCountTokensRequest");
export type CountTokensRequest = z.infer<typeof CountTokensRequest>;

/** A reply's blocks: those below, and from an Anthropic upstream any other it gave (server-tool blocks, a type new to us), as it gave it. */
const ResponseBlock = z.union([
  z.object({ type: z.literal("text"), text: z.string(), citations: Citations.optional() }),
  z.object({ type: z.literal("tool_use"), id: z.string(), name: z.string(), input: z.record(z.string(), z.unknown()) }),
  ThinkingBlock,
  RedactedThinkingBlock,
  z.looseObject({ type: z.string() }),
]);

export const MessageUsage = z.object({
  input_tokens: z.number().int(),
  output_tokens: z.number().int(),
  cache_creation_input_tokens: z.number().int().nullable(),
  cache_read_input_tokens: z.number().int().nullable(),
  server_tool_use: z.record(z.string(), z.number().int()).optional().openapi({ description: "Anthropic's server-tool counts, from an Anthropic upstream" }),
});

export const MessageResponse = z
  .object({
    id: z.string().openapi({ example: "msg_01XFDUDYJgAACzvnptvVoYEL" }),
    type: z.literal("message"),
    role: z.literal("assistant"),
    model: z.string(),
    content: z.array(ResponseBlock),
    stop_reason: z.enum(["end_turn", "max_tokens", "stop_sequence", "tool_use", "pause_turn", "refusal"]),
    stop_sequence: z.string().nullable(),
    usage: MessageUsage,
    edgeweave: z.record(z.string(), z.unknown()).openapi({ description: "Thread, checkpoint, routing, warnings and memory of the turn" }),
  })
  .openapi("AnthropicMessage");
export type MessageResponse = z.infer<typeof MessageResponse>;

export const AnthropicErrorBody = z
  .object({
    type: z.literal("error"),
    error: z.object({
      type: z.string().openapi({ example: "invalid_request_error" }),
      message: z.string(),
      bem_code: z.string().openapi({ example: "BEM-011" }),
    }),
  })
  .openapi("AnthropicError");
