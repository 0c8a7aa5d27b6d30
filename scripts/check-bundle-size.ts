// After `wrangler deploy --dry-run --outdir .wrangler/dry-run`: the worker bundle must stay under
// 300 KiB gzip, since every cold start parses all of it (static data such as word vectors is loaded
// through ASSETS, apart from it).
import { readFileSync } from "node:fs";
import { gzipSync } from "node:zlib";

const LIMIT_KIB = 300;
const bundle = readFileSync(".wrangler/dry-run/index.js");
const kib = gzipSync(bundle).length / 1024;
console.log(`worker bundle: ${(bundle.length / 1024).toFixed(1)} KiB, ${kib.toFixed(1)} KiB gzip (limit ${LIMIT_KIB})`);
if (kib > LIMIT_KIB) {
  console.error(`The worker bundle is ${kib.toFixed(1)} KiB gzip, over ${LIMIT_KIB} KiB: keep data out of it (ASSETS) or drop a dependency.`);
  process.exit(1);
}
