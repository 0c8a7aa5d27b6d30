/// <reference types="vite/client" />
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { loadModelsFromYaml } from "../../src/routing/yaml-loader";
import { createTenant, OPERATOR_KEY } from "../support/tenants";
import { DocShell } from "./doc-shell";
import { pages } from "./pages";

/**
 * Every snippet in README.md and docs/ runs here: the shell ones against the worker under test, in
 * one session per page (a page's snippets build on each other, as in a terminal). A snippet that
 * cannot run here says why on the line before it (`<!-- not run here: … -->`).
 */

type Snippet = { page: string; lang: string; code: string; notRun?: string };
const NOT_RUN = /<!-- not run here: (.+?) -->\s*$/;
const snippets: Snippet[] = Object.entries(pages).flatMap(([page, md]) =>
  [...md.matchAll(/^( *)```(\w*)\n([\s\S]*?)^\1```/gm)].map((m) => {
    const before = md.slice(0, m.index).trimEnd();
    const notRun = NOT_RUN.exec(before.slice(before.lastIndexOf("\n") + 1))?.[1];
    const indent = m[1]!.length;
    const code = m[3]!
      .split("\n")
      .map((l) => l.slice(indent))
      .join("\n");
    return { page, lang: m[2]!, code, notRun };
  }),
);
const SHELL = new Set(["bash", "sh"]);

describe("the docs' snippets", () => {
  it("each is a shell snippet, TypeScript, YAML, a picture or plain output, and each one not run says why", () => {
    expect(snippets.length).toBeGreaterThan(10);
    for (const s of snippets) expect(["bash", "sh", "ts", "yaml", "mermaid", ""], `${s.page}: \`\`\`${s.lang}`).toContain(s.lang);
    // Only shell snippets are run from the page itself; the rest are checked below by what they are.
    for (const s of snippets.filter((x) => x.notRun)) expect(SHELL.has(s.lang), `${s.page}: a not-run marker on ${s.lang}`).toBe(true);
  });

  const byPage = new Map<string, Snippet[]>();
  for (const s of snippets.filter((x) => SHELL.has(x.lang) && !x.notRun)) byPage.set(s.page, [...(byPage.get(s.page) ?? []), s]);
  for (const [page, shellSnippets] of byPage)
    it(`${page}: its shell snippets run against the worker, every request answered below 400`, async () => {
      const t = await createTenant();
      const tenant = `docs-${crypto.randomUUID().slice(0, 8)}`;
      const shell = new DocShell({ fetch: (req) => exports.default.fetch(req), settleMs: 10_000 });
      // A page that starts from an earlier one's variables (the walk-through's B and KEY) gets them.
      for (const [k, v] of Object.entries({ B: "http://localhost:8787", OP: OPERATOR_KEY, KEY: t.adminKey, EDGEWEAVE_KEY: t.adminKey })) shell.vars.set(k, v);
      for (const s of shellSnippets) {
        // As written, but for the local operator key and a tenant id of this run (storage is shared between test files).
        const code = s.code
          .replaceAll("dev-operator-key", OPERATOR_KEY)
          .replaceAll('"id":"acme"', `"id":"${tenant}"`)
          .replaceAll("/tenants/acme/", `/tenants/${tenant}/`);
        await shell.run(code);
      }
      expect(shell.sent.length).toBeGreaterThan(0);
      expect(shell.sent.filter((r) => r.status >= 400).map((r) => `${r.method} ${r.path}: ${r.status} ${r.body.slice(0, 300)}`)).toEqual([]);
      if (page === "README.md") {
        // The first call's promise: the second turn sees the fact and the first turn.
        const reply = JSON.parse(shell.sent.at(-1)!.body) as { choices: { message: { content: string } }[] };
        expect(reply.choices[0]!.message.content).toContain("Echo: What is my name?");
        expect(reply.choices[0]!.message.content).toContain("[style organization:acme] Use short sentences.");
        expect(reply.choices[0]!.message.content).toContain("Hi, I am Ada.");
      }
    });

  it("each YAML snippet (an agent's middleware) loads with models.yaml's own loader, every entry kept, no warning", () => {
    const yamlSnippets = snippets.filter((s) => s.lang === "yaml");
    expect(yamlSnippets.length).toBeGreaterThan(0);
    for (const s of yamlSnippets) {
      const agent = s.code
        .trimEnd()
        .split("\n")
        .map((l) => `    ${l}`)
        .join("\n");
      const warnings: string[] = [];
      const file = loadModelsFromYaml(`models:\n  - name: m\n    provider: openai\nagents:\n  - name: docs\n${agent}\n`, s.page, {
        onWarning: (w) => warnings.push(w),
      });
      expect(warnings, s.page).toEqual([]);
      expect(file.agents?.[0]?.middleware?.length, s.page).toBe(s.code.match(/^\s*- /gm)?.length);
    }
  });
});
