import { exports } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { createTenant } from "../support/tenants";
import { pages } from "./pages";

/**
 * The examples/ files run here, unchanged, against the worker under test: their requests to
 * EDGEWEAVE_URL's default origin reach it, everything else goes where it would. Each TypeScript
 * snippet of the docs is an excerpt of one of them, so it runs here too.
 */
const examples = Object.fromEntries(
  Object.entries(import.meta.glob<string>("../../examples/*.ts", { query: "?raw", import: "default", eager: true })).map(([p, text]) => [
    p.slice("../../".length),
    text,
  ]),
);
const ORIGIN = "127.0.0.1:8787";
// Refusals the clients ask for on purpose: the MCP client's GET for a standalone stream, which a stateless server answers 405 (docs/guides/mcp.md).
const EXPECTED = new Set(["405 GET /mcp"]);

/** The same code, whichever way a page or an example names the server and the key. */
const normal = (code: string) =>
  code
    .replace(/`\$\{process\.env\.EDGEWEAVE_URL \?\? "http:\/\/127\.0\.0\.1:8787"\}(\/[\w/-]*)?`/g, '"<origin>$1"')
    .replace(/"http:\/\/localhost:8787(\/[\w/-]*)?"/g, '"<origin>$1"')
    .replace(/process\.env\.EDGEWEAVE_KEY(!| \?\? "")?/g, "process.env.EDGEWEAVE_KEY")
    .replace(/\s+/g, " ");

/** `import { a, b } from "m";` is in an example that imports at least a and b from m (a snippet shows what it uses). */
function importedBy(line: string, body: string): boolean {
  const m = /^import \{ ([^}]+) \} from ("[^"]+");$/.exec(line);
  if (!m) return false;
  const names = m[1]!.split(", ");
  return [...body.matchAll(/import \{ ([^}]+) \} from ("[^"]+");/g)].some((i) => i[2] === m[2] && names.every((n) => i[1]!.split(", ").includes(n)));
}

const snippets = Object.entries(pages).flatMap(([page, md]) => [...md.matchAll(/^```ts\n([\s\S]*?)^```/gm)].map((m) => ({ page, code: m[1]! })));

describe("TypeScript snippets of the docs", () => {
  it("each is an excerpt of a file in examples/: every line of it, in one file", () => {
    expect(snippets.length).toBeGreaterThan(5);
    const bodies = Object.entries(examples).map(([file, text]) => [file, normal(text)] as const);
    const stray: string[] = [];
    for (const { page, code } of snippets) {
      const lines = code
        .split("\n")
        .map((l) => normal(l.replace(/(^|\s)\/\/ .*$/, "")).trim())
        .filter(Boolean);
      if (!bodies.some(([, body]) => lines.every((l) => body.includes(l) || importedBy(l, body))))
        stray.push(`${page}: ${lines.find((l) => !bodies.some(([, b]) => b.includes(l) || importedBy(l, b))) ?? lines.join(" ")}`);
    }
    expect(stray).toEqual([]);
  });
});

describe("examples/", () => {
  const original = globalThis.fetch;
  afterEach(() => {
    globalThis.fetch = original;
  });

  for (const file of Object.keys(examples))
    it(`${file} runs against the worker, every request answered below 400`, async () => {
      const t = await createTenant();
      const answered: string[] = [];
      globalThis.fetch = async (input: RequestInfo | URL, init?: RequestInit) => {
        const req = new Request(input, init);
        if (new URL(req.url).host !== ORIGIN) return original(req);
        const res = await exports.default.fetch(req);
        answered.push(`${res.status} ${req.method} ${new URL(req.url).pathname}`);
        return res;
      };
      process.env.EDGEWEAVE_KEY = t.adminKey;
      await import(/* @vite-ignore */ `../../${file}`);
      expect(answered.length).toBeGreaterThan(0);
      expect(answered.filter((a) => Number(a.slice(0, 3)) >= 400 && !EXPECTED.has(a))).toEqual([]);
    }, 60_000);
});
