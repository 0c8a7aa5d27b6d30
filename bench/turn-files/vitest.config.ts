import { relative } from "node:path";
import type { Node } from "estree";
import MagicString from "magic-string";
import type { Plugin } from "vite";
import { defineConfig, mergeConfig } from "vitest/config";
import base from "../../vitest.config";

/**
 * Counts the files of src/ a stateful chat turn runs code in: every function of src/ is rewritten to note its file
 * on entry (globalThis.__turnFiles), and bench/turn-files/turn-files.bench.ts reads the notes of one turn.
 * npx vitest run -c bench/turn-files/vitest.config.ts — a figure for docs/ARCHITECTURE.md, not part of `npm test`.
 */
const root = new URL("../..", import.meta.url).pathname;

function noteEntries(): Plugin {
  return {
    name: "note-function-entries",
    enforce: "post",
    transform(code, id) {
      const file = id.split("?")[0]!;
      if (!file.startsWith(`${root}src/`) || !file.endsWith(".ts")) return null;
      const note = `globalThis.__turnFiles?.add(${JSON.stringify(relative(root, file))});`;
      const out = new MagicString(code);
      const visit = (n: unknown): void => {
        if (!n || typeof n !== "object") return;
        if (Array.isArray(n)) {
          for (const child of n) visit(child);
          return;
        }
        const node = n as Node & { start: number; end: number };
        if (node.type === "FunctionDeclaration" || node.type === "FunctionExpression" || node.type === "ArrowFunctionExpression") {
          const body = node.body as Node & { start: number; end: number };
          if (body.type === "BlockStatement") out.appendLeft(body.start + 1, note);
          else out.appendLeft(body.start, `(${note.slice(0, -1)}, (`), out.appendRight(body.end, "))");
        }
        for (const [k, v] of Object.entries(node)) if (k !== "type" && k !== "start" && k !== "end") visit(v);
      };
      visit(this.parse(code));
      return { code: out.toString(), map: out.generateMap({ hires: true }) };
    },
  };
}

export default defineConfig(async (env) => {
  const config = mergeConfig(await base(env), { plugins: [noteEntries()] });
  // Replaced, not merged: merging would add the whole suite's files to this one.
  config.test = { ...config.test, include: ["bench/turn-files/*.bench.ts"] };
  return config;
});
