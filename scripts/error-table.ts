// `npm run docs:errors`: writes the error code table from src/core/errors.ts into README.md
// between <!-- errors:start --> and <!-- errors:end --> (markers appended when absent).
import { readFileSync, writeFileSync } from "node:fs";
import { catalog } from "../src/core/errors.ts";
import { renderErrorTable, withSection } from "./error-table-render.ts";

const path = new URL("../README.md", import.meta.url);
const before = readFileSync(path, "utf8");
const after = withSection(before, renderErrorTable(catalog));
if (after === before) {
  console.log("README.md error table is up to date.");
} else {
  writeFileSync(path, after);
  console.log(`README.md error table written (${Object.keys(catalog).length} codes).`);
}
