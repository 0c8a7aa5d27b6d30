import { MODALITIES, MODALITY_BIT } from "../model-index";
import { filterByBits, indexedStrategy } from "../strategy";

// One reason string per missing-modality combination (16 at most), not one per exclusion.
const reasons = new Map<number, string>();
function lacks(missing: number): string {
  let r = reasons.get(missing);
  if (r === undefined) {
    r = `lacks ${MODALITIES.filter((m) => missing & MODALITY_BIT[m]).join(", ")} input`;
    reasons.set(missing, r);
  }
  return r;
}

/** HARD: keeps models that accept every modality in the request (text, image, audio, video). */
export const ModalityStrategy = indexedStrategy("modality", (candidates, ctx) => {
  const need = ctx.requirements.modalityMask;
  const mask = ctx.index.modalityMask;
  return filterByBits(candidates, ctx.index.modalityBits(need), ctx, (p) => lacks(need & ~mask[p]!));
});

export { lacks as modalityReason };
