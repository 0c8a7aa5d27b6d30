import { AppError } from "../core/errors";
import { compiled } from "../routing/models.generated";

/** The request metadata keys budgets may be on: models.yaml `budget_metadata_keys`. */
export const budgetMetadataKeys: readonly string[] = compiled.budgetMetadataKeys;

const declared = () => (budgetMetadataKeys.length > 0 ? budgetMetadataKeys.join(", ") : "none");

/** A metadata budget's target: `key=value`, the key one models.yaml declares, the value not empty. */
export function checkTagTarget(target: string): void {
  const at = target.indexOf("=");
  const key = target.slice(0, Math.max(at, 0));
  if (at < 1 || at === target.length - 1) throw new AppError("BEM-011", `target: a metadata budget is on "key=value" (e.g. team=search), not '${target}'`);
  if (!budgetMetadataKeys.includes(key))
    throw new AppError("BEM-011", `target: '${key}' is no metadata key budgets may be on (models.yaml budget_metadata_keys: ${declared()})`);
}

/**
 * The budget tags of a request: its metadata's values of the declared keys. `own` are keys the wire format
 * reads itself; `stored` says the format keeps its metadata (Responses), so other keys have a use; elsewhere
 * another key would be dropped without a word, and is refused (400 BEM-011).
 */
export function budgetTags(
  metadata: Readonly<Record<string, unknown>> | null | undefined,
  opts: { own?: readonly string[]; stored?: boolean } = {},
): Record<string, string> | undefined {
  const tags: Record<string, string> = {};
  for (const [key, value] of Object.entries(metadata ?? {})) {
    if (opts.own?.includes(key)) continue;
    if (!budgetMetadataKeys.includes(key)) {
      if (opts.stored) continue;
      throw new AppError(
        "BEM-011",
        `metadata.${key}: not kept here; metadata carries the keys budgets may be on (models.yaml budget_metadata_keys: ${declared()})`,
      );
    }
    if (typeof value !== "string" || value === "") throw new AppError("BEM-011", `metadata.${key}: a budget tag's value is a non-empty string`);
    tags[key] = value;
  }
  return Object.keys(tags).length > 0 ? tags : undefined;
}
