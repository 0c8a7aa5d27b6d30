import { z } from "zod";
import { AppError } from "../../core/errors";
import type { Content } from "../../core/message";
import type { Runtime } from "../runtime";
import type { AgentState, Reducers, StateUpdate } from "../state";
import { describeIssues } from "../../core/zod-issues";

/** The input schema of a tool: a JSON Schema object. */
export const ToolInputSchema = z.looseObject({
  type: z.literal("object"),
  properties: z.record(z.string(), z.record(z.string(), z.unknown())).optional(),
  required: z.array(z.string()).optional(),
});
export type ToolInputSchema = z.infer<typeof ToolInputSchema>;

/** What the runtime fills into an injected field. */
export const Injection = z.enum(["state", "tool_call_id", "context"]);
export type Injection = z.infer<typeof Injection>;

/** A tool's way of writing state: channels and messages, merged through the reducers. */
export class Command {
  constructor(readonly update: StateUpdate) {}
}
export const command = (update: StateUpdate): Command => new Command(update);

/** A tool result with more than text; the executor fills id, tool_call_id and created_at. */
export type ToolReply = { content: Content; metadata?: Record<string, unknown> };
export type ToolResult = string | ToolReply | Command;

export type ToolCallRuntime = Runtime & { toolCallId: string; state: AgentState };

export type ToolSpec = {
  name: string;
  description: string;
  inputSchema: ToolInputSchema;
  /** Input field name → what the runtime injects there; hidden from the model. */
  injected?: Readonly<Record<string, Injection>>;
  /** Channels the tool writes, with their reducers. */
  stateSchema?: Reducers;
  handler: (input: Record<string, unknown>, runtime: ToolCallRuntime) => ToolResult | Promise<ToolResult>;
};

export type Tool = ToolSpec & {
  /** Validates the model-provided arguments (injected fields excluded). */
  readonly validate: (input: unknown) => { ok: true; value: Record<string, unknown> } | { ok: false; error: string };
};

const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/; // the name rule OpenAI and Anthropic share

/** Declares a server-side tool. A bad declaration is a configuration error (BEM-084). */
export function defineTool(spec: ToolSpec): Tool {
  if (!TOOL_NAME.test(spec.name)) throw new AppError("BEM-084", `Tool name '${spec.name}' must match ${TOOL_NAME.source}`);
  const schema = ToolInputSchema.safeParse(spec.inputSchema);
  if (!schema.success) throw new AppError("BEM-084", `Tool '${spec.name}': inputSchema must be a JSON Schema object`);
  const visible = visibleSchema(spec.inputSchema, spec.injected);
  let validator: z.ZodType;
  try {
    validator = z.fromJSONSchema(visible as Parameters<typeof z.fromJSONSchema>[0]);
  } catch (e) {
    throw new AppError("BEM-084", `Tool '${spec.name}': inputSchema is not usable JSON Schema`, { internal: String(e) });
  }
  const validate: Tool["validate"] = (input) => {
    const parsed = validator.safeParse(input);
    if (parsed.success) return { ok: true, value: parsed.data as Record<string, unknown> };
    return { ok: false, error: describeIssues(parsed.error.issues, { root: "(input)", input }) };
  };
  return { ...spec, validate };
}

function visibleSchema(schema: ToolInputSchema, injected: ToolSpec["injected"]): ToolInputSchema {
  const hidden = new Set(Object.keys(injected ?? {}));
  if (hidden.size === 0) return schema;
  const out: ToolInputSchema = { ...schema };
  if (schema.properties) out.properties = Object.fromEntries(Object.entries(schema.properties).filter(([k]) => !hidden.has(k)));
  if (schema.required) out.required = schema.required.filter((k) => !hidden.has(k));
  return out;
}

/** The input schema the model sees: injected fields removed from properties and required. */
export function modelVisibleSchema(tool: Pick<ToolSpec, "inputSchema" | "injected">): ToolInputSchema {
  return visibleSchema(tool.inputSchema, tool.injected);
}

/** Tool declarations in the OpenAI wire format (provider adapters convert from this). */
export function toolDefinitions(tools: readonly Tool[]) {
  return tools.map((t) => ({
    type: "function" as const,
    function: { name: t.name, description: t.description, parameters: modelVisibleSchema(t) },
  }));
}
