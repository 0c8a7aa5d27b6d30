import { estimateTokens } from "../core/tokens";
import type { Content, MessageInput } from "../core/message";
import type { AgentConfig, Modality, ModelConfig } from "../config/model-config";

export type RouteMessage = Pick<MessageInput, "role" | "content" | "tool_calls" | "name">;

/** What the router sees of a request. */
export type RouteRequest = {
  /** The new input (a string or OpenAI-style parts). */
  content?: Content | null;
  /** Messages that will be sent (history, system, facts), when known. */
  messages?: readonly RouteMessage[];
  metadata?: { capabilities?: readonly string[] };
  agent?: AgentConfig;
  model_override?: string;
  /** Tokens the model must hold (input + system + facts); estimated from content/messages when absent. */
  min_context_tokens?: number;
};

/** The request's needs, derived once. Modality, explicit capabilities and context are HARD; agent tags are SOFT. */
export type Requirements = {
  /** In the order text, image, audio, video. */
  modalities: Modality[];
  capabilities: string[];
  capabilitySource: "metadata" | "agent_tags" | "none";
  capabilitiesHard: boolean;
  /** Agent tags no model lists as a capability: not routing hints. */
  ignoredTags: string[];
  minContextTokens: number;
};

// A document is read as text (or refused by a provider that cannot take it); thinking is the model's own text.
const PART_MODALITY = {
  text: "text",
  image_url: "image",
  input_audio: "audio",
  video_url: "video",
  document: "text",
  thinking: "text",
  redacted_thinking: "text",
  tool_call: "text",
  anthropic_block: "text",
} as const;
const MODALITY_ORDER: readonly Modality[] = ["text", "image", "audio", "video"];

function addContent(content: Content | null | undefined, into: Set<Modality>): void {
  if (content == null) return;
  if (typeof content === "string") {
    if (content !== "") into.add("text");
    return;
  }
  for (const part of content) into.add(PART_MODALITY[part.type]);
}

export function deriveRequirements(req: RouteRequest, models: readonly ModelConfig[]): Requirements {
  const seen = new Set<Modality>();
  addContent(req.content, seen);
  for (const m of req.messages ?? []) addContent(m.content, seen);
  if (seen.size === 0) seen.add("text"); // an empty request is a text request
  const modalities = MODALITY_ORDER.filter((m) => seen.has(m));

  const listed = (tag: string) => models.some((m) => m.capabilities.includes(tag));
  const explicit = req.metadata?.capabilities ?? [];
  let capabilities: string[] = [];
  let capabilitySource: Requirements["capabilitySource"] = "none";
  let ignoredTags: string[] = [];
  if (explicit.length > 0) {
    capabilities = [...new Set(explicit)];
    capabilitySource = "metadata";
  } else if (req.agent && req.agent.tags.length > 0) {
    const tags = [...new Set(req.agent.tags)];
    capabilities = tags.filter(listed);
    ignoredTags = tags.filter((t) => !listed(t));
    if (capabilities.length > 0) capabilitySource = "agent_tags";
  }

  let minContextTokens = req.min_context_tokens ?? 0;
  if (req.min_context_tokens === undefined) {
    if (req.content != null) minContextTokens += estimateTokens({ role: "user", content: req.content });
    for (const m of req.messages ?? []) minContextTokens += estimateTokens(m);
  }

  return {
    modalities,
    capabilities,
    capabilitySource,
    capabilitiesHard: capabilitySource === "metadata",
    ignoredTags,
    minContextTokens,
  };
}
