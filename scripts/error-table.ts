// `npm run docs:errors`: writes the error code table from src/core/errors.ts into docs/reference/errors.md
// between <!-- errors:start --> and <!-- errors:end --> (markers appended when absent).
import { readFileSync, writeFileSync } from "node:fs";
import { catalog } from "../src/core/errors.ts";
import { renderErrorTable, withSection } from "./error-table-render.ts";

const path = new URL("../docs/reference/errors.md", import.meta.url);
const before = readFileSync(path, "utf8");
const after = withSection(before, renderErrorTable(catalog));
if (after === before) {
  console.log("docs/reference/errors.md error table is up to date.");
} else {
  writeFileSync(path, after);
  console.log(`docs/reference/errors.md error table written (${Object.keys(catalog).length} codes).`);
}
