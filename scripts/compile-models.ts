// models.yaml -> src/routing/models.generated.ts (validated data).
// Runs before dev, test and deploy (npm run build:models; wrangler.toml [build]).
// Usage: tsx scripts/compile-models.ts [models.yaml] [--out src/routing/models.generated.ts | -]
// A bad file exits 1 with "BEM-0xx file:line: what is wrong" on stderr.
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { isAppError } from "../src/errors.ts";
import { compileModels, renderCompiledModule } from "../src/routing/compile.ts";

function parseArgs(argv: string[]): { input: string; out: string } {
  let input = "models.yaml";
  let out = "src/routing/models.generated.ts";
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--out") out = argv[++i] ?? out;
    else input = a;
  }
  return { input, out };
}

function main(): number {
  const { input, out } = parseArgs(process.argv.slice(2));
  let text: string;
  let created: number;
  try {
    text = readFileSync(input, "utf8");
    created = Math.floor(statSync(input).mtimeMs / 1000);
  } catch (e) {
    const why = (e as NodeJS.ErrnoException).code ?? "read error";
    console.error(`BEM-043 ${input}: cannot read the model file (${why})`);
    return 1;
  }
  try {
    const data = compileModels(text, input, created, { onWarning: (w: string) => console.warn(`warning ${w}`) });
    const module = renderCompiledModule(data, input);
    // Unchanged output is not rewritten, so `wrangler dev` (which watches src/) does not rebuild in a loop.
    if (out === "-") process.stdout.write(module);
    else if (!existsSync(out) || readFileSync(out, "utf8") !== module) writeFileSync(out, module);
    console.error(`${input}: ${data.models.length} models, ${data.agents.length} agents -> ${out}`);
    return 0;
  } catch (e) {
    if (isAppError(e)) {
      for (const line of e.message.split("\n")) console.error(`${e.code} ${line}`);
      return 1;
    }
    throw e;
  }
}

process.exitCode = main();
