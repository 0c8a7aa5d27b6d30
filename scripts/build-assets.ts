// Builds the Workers Static Assets folder (dist/public, not committed) that the worker serves
// through its ASSETS binding: the pages in static/, Scalar's pinned viewer bundle for /docs
// (so the reference works offline and loads nothing from a CDN) and the inspector's
// TypeScript (src/ui) bundled into one script. Run by `npm run build:worker` (wrangler's [build]
// command, so before dev, deploy and the deploy dry run) and by vitest.config.ts.
import { cpSync, mkdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
export const ASSETS_DIR = join(ROOT, "dist", "public");

export async function buildAssets(): Promise<void> {
  rmSync(ASSETS_DIR, { recursive: true, force: true });
  mkdirSync(ASSETS_DIR, { recursive: true });
  cpSync(join(ROOT, "static"), ASSETS_DIR, { recursive: true });
  cpSync(join(ROOT, "node_modules", "@scalar", "api-reference", "dist", "browser", "standalone.js"), join(ASSETS_DIR, "docs", "scalar.js"));
  await build({
    entryPoints: [join(ROOT, "src", "ui", "inspector.ts")],
    outfile: join(ASSETS_DIR, "ui", "inspector.js"),
    bundle: true,
    format: "iife",
    target: "es2020",
    platform: "browser",
    legalComments: "none",
    logLevel: "warning",
  });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  await buildAssets();
  console.log(`Built static assets into ${ASSETS_DIR}`);
}
