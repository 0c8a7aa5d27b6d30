import type { ModelConfig } from "../config/model-config";

/**
 * Per-model `aliases` (models.yaml): other names a request may use for a model. A trailing `*`
 * matches any suffix (`claude-sonnet-*` takes every dated Claude Code name). Checked when
 * models.yaml is compiled, so at run time a name resolves to at most one model: a configured
 * name first, then an exact alias, then the one pattern that matches.
 */
export type AliasConflict = { model: number; alias: number; message: string };

const isPattern = (a: string) => a.endsWith("*");
const stem = (a: string) => a.slice(0, -1);

/** Whether two names of different models (a name, an exact alias or a pattern) can both match one request. */
function overlaps(a: string, b: string): boolean {
  if (isPattern(a) && isPattern(b)) return stem(a).startsWith(stem(b)) || stem(b).startsWith(stem(a));
  if (isPattern(a)) return b.startsWith(stem(a));
  if (isPattern(b)) return a.startsWith(stem(b));
  return a === b;
}

/** Every alias that duplicates another name or overlaps another model's names (BEM-042 at build time). */
export function aliasConflicts(models: readonly Pick<ModelConfig, "name" | "aliases">[]): AliasConflict[] {
  const out: AliasConflict[] = [];
  const seen: { model: number; name: string; alias: boolean }[] = models.map((m, i) => ({ model: i, name: m.name, alias: false }));
  models.forEach((m, i) => {
    (m.aliases ?? []).forEach((alias, j) => {
      const clash = seen.find((s) => (s.model === i ? s.alias && s.name === alias : overlaps(s.name, alias)));
      if (clash)
        out.push({
          model: i,
          alias: j,
          message:
            clash.model === i
              ? `duplicate alias "${alias}"`
              : `alias "${alias}" overlaps ${clash.alias ? "alias" : "model name"} "${clash.name}" of model ${models[clash.model]!.name}`,
        });
      seen.push({ model: i, name: alias, alias: true });
    });
  });
  return out;
}

/** name → model, through names and aliases; built once per model list. */
export class ModelNames {
  private readonly exact = new Map<string, ModelConfig>();
  private readonly patterns: [string, ModelConfig][] = [];

  constructor(models: readonly ModelConfig[]) {
    for (const m of models) this.exact.set(m.name, m);
    for (const m of models)
      for (const a of m.aliases ?? []) {
        if (isPattern(a)) this.patterns.push([stem(a), m]);
        else if (!this.exact.has(a)) this.exact.set(a, m);
      }
    // Longest stem first: without overlaps at most one matches, this only keeps lookups deterministic for routers built in code.
    this.patterns.sort((p, q) => q[0].length - p[0].length);
  }

  lookup(name: string): ModelConfig | undefined {
    return this.exact.get(name) ?? this.patterns.find(([s]) => name.startsWith(s))?.[1];
  }
}
