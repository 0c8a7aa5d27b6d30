/**
 * Build-time: models.yaml text -> the source of models.generated.ts.
 * Imports the YAML loader, so runtime code must not import this module.
 */
import type { CompiledModels } from "./compiled";
import { type LoadOptions, loadModelsFromYaml } from "./yaml-loader";

export function compileModels(text: string, fileName: string, created: number, options: LoadOptions = {}): CompiledModels {
  const file = loadModelsFromYaml(text, fileName, options);
  return {
    models: file.models,
    defaultModel: file.default_model,
    agents: file.agents,
    embedders: file.embedders,
    embedder: file.embedder,
    budgetMetadataKeys: file.budget_metadata_keys,
    created,
  };
}

export function renderCompiledModule(data: CompiledModels, source: string): string {
  return [
    `// Generated from ${source} by scripts/compile-models.ts. Do not edit: change ${source} and run \`npm run build:models\`.`,
    `import type { CompiledModels } from "./compiled";`,
    ``,
    `export const compiled: CompiledModels = ${JSON.stringify(data, null, 2)};`,
    ``,
  ].join("\n");
}
