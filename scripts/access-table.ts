// `npm run docs:access`: writes the access table from POLICY (src/auth/policy.ts)
// into docs/reference/access.md between <!-- access:start --> and <!-- access:end -->.
import { readFileSync, writeFileSync } from "node:fs";
import { ACCESS_END, ACCESS_START, accessSection } from "../src/auth/policy.ts";

const path = new URL("../docs/reference/access.md", import.meta.url);
const before = readFileSync(path, "utf8");
const start = before.indexOf(ACCESS_START);
const end = before.indexOf(ACCESS_END, start);
if (start < 0 || end < 0) throw new Error("docs/reference/access.md lacks the access:start / access:end markers");
const after = before.slice(0, start) + accessSection() + before.slice(end + ACCESS_END.length);
if (after === before) console.log("docs/reference/access.md access table is up to date.");
else {
  writeFileSync(path, after);
  console.log("docs/reference/access.md access table written.");
}
