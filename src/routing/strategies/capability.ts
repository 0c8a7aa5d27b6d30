import { bitsetWords, intersect, hasBit } from "../bitset";
import type { ModelIndex } from "../model-index";
import { filterByBits, indexedStrategy } from "../strategy";

/** Models listing every capability in `caps` (an empty bitset when some capability is listed by none). */
export function capabilityBits(index: ModelIndex, caps: readonly string[]): Uint32Array {
  let bits: Uint32Array | undefined;
  for (const cap of caps) {
    const b = index.capabilityBits(cap);
    if (!b) return new Uint32Array(bitsetWords(index.size));
    bits = bits ? intersect(bits, b) : b;
  }
  return bits ?? new Uint32Array(bitsetWords(index.size)).fill(0xffffffff);
}

/**
 * Explains which of `caps` model p lacks, e.g. "lacks capability code, json",
 * building one string per combination of missing capabilities.
 */
export function capabilityReasoner(index: ModelIndex, capabilities: readonly string[], suffix = ""): (p: number) => string {
  const caps = capabilities.slice(0, 31);
  const perCap = caps.map((c) => index.capabilityBits(c));
  const reasons = new Map<number, string>();
  return (p) => {
    let missing = 0;
    for (let i = 0; i < perCap.length; i++) {
      const b = perCap[i];
      if (!b || !hasBit(b, p)) missing |= 1 << i;
    }
    let reason = reasons.get(missing);
    if (reason === undefined) {
      reason = `lacks capability ${caps.filter((_, i) => missing & (1 << i)).join(", ")}${suffix}`;
      reasons.set(missing, reason);
    }
    return reason;
  };
}

/**
 * metadata.capabilities (HARD), else the agent's tags that some model lists as
 * a capability (SOFT: FallbackStrategy may relax them).
 */
export const CapabilityStrategy = indexedStrategy("capability", (candidates, ctx) => {
  const r = ctx.requirements;
  const ignored = r.ignoredTags.length > 0 ? `agent tags ${r.ignoredTags.join(", ")} match no model capability` : undefined;
  if (r.capabilities.length === 0) return { kept: candidates, excluded: [], note: ignored ?? "no capability requested" };
  const soft = r.capabilitiesHard ? "" : " (agent tag, soft)";
  const why = capabilityReasoner(ctx.index, r.capabilities, soft);
  const res = filterByBits(candidates, capabilityBits(ctx.index, r.capabilities), ctx, why);
  const source = r.capabilitiesHard ? "metadata.capabilities" : "agent tags";
  res.note = `${source}: ${r.capabilities.join(", ")}${ignored ? `; ${ignored}` : ""}`; // set, not spread: spreading would build the lazy reasons
  return res;
});
