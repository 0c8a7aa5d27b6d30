/// <reference types="vite/client" />
import { describe, expect, it } from "vitest";
import readme from "../../README.md?raw";
import { pages } from "./pages";

// Every file a page may link to (keys only: nothing is loaded), as paths from the repository root (Vite names
// a file under test/ relative to this one). Folders exist when a file sits under them.
const files = new Set(
  Object.keys(
    import.meta.glob([
      "../../*",
      "../../.ci/*",
      "../../.dependency-cruiser.cjs",
      "../../{src,test,bench,docs,examples,scripts,langgraph,static,migrations}/**/*",
      "!../../langgraph/dist/**",
    ]),
  ).map((p) => resolve("test/docs/links.test.ts", p)),
);
const exists = (path: string) => files.has(path) || [...files].some((f) => f.startsWith(`${path}/`));

/** Prose only: fenced blocks and inline code hold examples, not links. */
const prose = (md: string) => md.replace(/^```[\s\S]*?^```/gm, "").replace(/`[^`\n]*`/g, "");

/** GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens, repeats numbered. */
function anchors(md: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const [, heading] of prose(md).matchAll(/^#{1,6} (.+)$/gm)) {
    const base = heading!
      .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/\s/g, "-");
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

function resolve(from: string, target: string): string {
  const parts = from.split("/").slice(0, -1);
  for (const seg of target.split("/")) {
    if (seg === "..") parts.pop();
    else if (seg !== "." && seg !== "") parts.push(seg);
  }
  return parts.join("/");
}

describe("links in README.md and docs/", () => {
  it("finds the pages", () => {
    expect(Object.keys(pages)).toEqual(expect.arrayContaining(["README.md", "docs/getting-started.md", "docs/ARCHITECTURE.md", "docs/reference/api.md"]));
  });

  it("every relative link names a file of the repository, and every #anchor a heading of its page", () => {
    const broken: string[] = [];
    for (const [page, md] of Object.entries(pages)) {
      for (const [, target] of prose(md).matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/i.test(target!)) continue; // https:, mailto:
        const [path, anchor] = target!.split("#") as [string, string | undefined];
        const file = path === "" ? page : resolve(page, path);
        if (!exists(file)) broken.push(`${page}: ${target} (no ${file})`);
        else if (anchor !== undefined && !(pages[file] && anchors(pages[file]).has(anchor)))
          broken.push(`${page}: ${target} (no heading #${anchor} in ${file})`);
      }
    }
    expect(broken).toEqual([]);
  });

  it("every page under docs/ is reachable from README.md by links", () => {
    const reached = new Set(["README.md"]);
    const queue = ["README.md"];
    while (queue.length) {
      const page = queue.shift()!;
      for (const [, target] of prose(pages[page]!).matchAll(/\]\(([^)\s#]+)(#[^)]*)?\)/g)) {
        const file = resolve(page, target!);
        if (pages[file] !== undefined && !reached.has(file)) {
          reached.add(file);
          queue.push(file);
        }
      }
    }
    expect(Object.keys(pages).filter((p) => !reached.has(p))).toEqual([]);
  });
});

describe("README.md", () => {
  it("stays a front page: at most 200 lines, with the install and test commands in a code block", () => {
    expect(readme.split("\n").length).toBeLessThanOrEqual(200);
    const blocks = [...readme.matchAll(/^```[^\n]*\n([\s\S]*?)^```/gm)].map((m) => m[1]!).join("\n");
    expect(blocks).toMatch(/^npm (install|ci)\b/m);
    expect(blocks).toMatch(/^npm test\b/m);
  });
});
