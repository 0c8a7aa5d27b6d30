import { filterWith, missingModalities, type RoutingStrategy } from "../strategy";

/** HARD: keeps models that accept every modality in the request (text, image, audio, video). */
export const ModalityStrategy: RoutingStrategy = {
  name: "modality",
  apply: (candidates, ctx) => filterWith(candidates, (m) => missingModalities(m, ctx.requirements)),
};
