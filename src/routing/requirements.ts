import { estimateTokens } from "../memory/tokens";
import type { Content, MessageInput } from "../thread/message";
import type { AgentConfig, Modality } from "./model-config";
import { MODALITIES, MODALITY_BIT, type ModelIndex } from "./model-index";

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
  modalities: Modality[];
  modalityMask: number;
  capabilities: string[];
  capabilitySource: "metadata" | "agent_tags" | "none";
  capabilitiesHard: boolean;
  /** Agent tags no model lists as a capability: not routing hints. */
  ignoredTags: string[];
  minContextTokens: number;
};

const PART_MODALITY = { text: "text", image_url: "image", input_audio: "audio", video_url: "video" } as const;

function addContent(content: Content | null | undefined, mask: number): number {
  if (content == null) return mask;
  if (typeof content === "string") return content === "" ? mask : mask | MODALITY_BIT.text;
  for (const part of content) mask |= MODALITY_BIT[PART_MODALITY[part.type]];
  return mask;
}

export function deriveRequirements(req: RouteRequest, index: ModelIndex): Requirements {
  let mask = addContent(req.content, 0);
  for (const m of req.messages ?? []) mask = addContent(m.content, mask);
  if (mask === 0) mask = MODALITY_BIT.text; // an empty request is a text request
  const modalities = MODALITIES.filter((m) => mask & MODALITY_BIT[m]);

  const explicit = req.metadata?.capabilities ?? [];
  let capabilities: string[] = [];
  let capabilitySource: Requirements["capabilitySource"] = "none";
  let ignoredTags: string[] = [];
  if (explicit.length > 0) {
    capabilities = [...new Set(explicit)];
    capabilitySource = "metadata";
  } else if (req.agent && req.agent.tags.length > 0) {
    const tags = [...new Set(req.agent.tags)];
    capabilities = tags.filter((t) => index.hasCapability(t));
    ignoredTags = tags.filter((t) => !index.hasCapability(t));
    if (capabilities.length > 0) capabilitySource = "agent_tags";
  }

  let minContextTokens = req.min_context_tokens ?? 0;
  if (req.min_context_tokens === undefined) {
    if (req.content != null) minContextTokens += estimateTokens({ role: "user", content: req.content });
    for (const m of req.messages ?? []) minContextTokens += estimateTokens(m);
  }

  return {
    modalities,
    modalityMask: mask,
    capabilities,
    capabilitySource,
    capabilitiesHard: capabilitySource === "metadata",
    ignoredTags,
    minContextTokens,
  };
}
