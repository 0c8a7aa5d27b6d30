// Builds the Workers Static Assets folder (dist/public, not committed) that the worker serves
// through its ASSETS binding: the pages in static/, Scalar's pinned viewer bundle for /docs
// (so the reference works offline and loads nothing from a CDN) and, once bundled, the inspector.
import { cpSync, mkdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";

const ROOT = join(dirname(new URL(import.meta.url).pathname), "..");
export const OUT = join(ROOT, "dist", "public");

rmSync(OUT, { recursive: true, force: true });
mkdirSync(OUT, { recursive: true });
cpSync(join(ROOT, "static"), OUT, { recursive: true });
cpSync(join(ROOT, "node_modules", "@scalar", "api-reference", "dist", "browser", "standalone.js"), join(OUT, "docs", "scalar.js"));
console.log(`Built static assets into ${OUT}`);
