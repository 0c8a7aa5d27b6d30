import { filterWith, missingCapabilities, type RoutingStrategy } from "../strategy";

/**
 * metadata.capabilities (HARD), else the agent's tags that some model lists as
 * a capability (SOFT: FallbackStrategy may relax them).
 */
export const CapabilityStrategy: RoutingStrategy = {
  name: "capability",
  apply(candidates, ctx) {
    const r = ctx.requirements;
    const ignored = r.ignoredTags.length > 0 ? `agent tags ${r.ignoredTags.join(", ")} match no model capability` : undefined;
    if (r.capabilities.length === 0) return { kept: [...candidates], excluded: [], note: ignored ?? "no capability requested" };
    const soft = r.capabilitiesHard ? "" : " (agent tag, soft)";
    const source = r.capabilitiesHard ? "metadata.capabilities" : "agent tags";
    return {
      ...filterWith(candidates, (m) => missingCapabilities(m, r, soft)),
      note: `${source}: ${r.capabilities.join(", ")}${ignored ? `; ${ignored}` : ""}`,
    };
  },
};
