/**
 * The package entry `edgeweave/langgraph` works from a tarball: `npm pack` (prepack builds
 * dist/langgraph), unpack it into an empty project's node_modules, type-check an app that
 * imports it (NodeNext resolution, so the `exports` map and its types are what is used) and
 * import it under Node. The package must depend on nothing and name LangGraph as its peers, so
 * installing it fetches nothing a LangGraph app lacks. Offline: instead of `npm install`, the
 * tarball is unpacked and the app's LangGraph packages are linked from this repository's
 * node_modules, as an app that uses LangGraph already has them.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const repo = resolve(import.meta.dirname, "..");
const dir = mkdtempSync(join(tmpdir(), "edgeweave-pack-"));
const run = (cmd: string, args: string[], cwd: string) => execFileSync(cmd, args, { cwd, stdio: ["ignore", "pipe", "inherit"] }).toString();

try {
  const packed = JSON.parse(run("npm", ["pack", "--json", "--pack-destination", dir], repo)) as { filename: string; files: { path: string }[] }[];
  const tarball = join(dir, packed[0]!.filename);
  const files = packed[0]!.files.map((f) => f.path);
  if (!files.includes("dist/langgraph/index.d.ts") || files.some((f) => f.startsWith("src/"))) {
    throw new Error(`unexpected tarball contents: ${files.join(", ")}`);
  }
  const app = join(dir, "app");
  const pkg = join(app, "node_modules", "edgeweave");
  mkdirSync(pkg, { recursive: true });
  run("tar", ["-xzf", tarball, "-C", pkg, "--strip-components=1"], dir);
  // Installing it must fetch nothing but what a LangGraph app already has: no dependencies, LangGraph as peers.
  const manifest = JSON.parse(readFileSync(join(pkg, "package.json"), "utf8")) as { dependencies?: object; peerDependencies?: Record<string, string> };
  const peers = Object.keys(manifest.peerDependencies ?? {}).sort();
  if (Object.keys(manifest.dependencies ?? {}).length > 0 || peers.join() !== "@langchain/core,@langchain/langgraph-checkpoint") {
    throw new Error(
      `the package should depend on nothing and name LangGraph as peers; it has ${JSON.stringify({ dependencies: manifest.dependencies, peers })}`,
    );
  }
  symlinkSync(join(repo, "node_modules", "@langchain"), join(app, "node_modules", "@langchain"));
  symlinkSync(join(repo, "node_modules", "@types"), join(app, "node_modules", "@types"));
  writeFileSync(join(app, "package.json"), JSON.stringify({ name: "app", private: true, type: "module" }));
  writeFileSync(
    join(app, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: { target: "es2022", module: "nodenext", moduleResolution: "nodenext", strict: true, noEmit: true, skipLibCheck: true, types: ["node"] },
      files: ["app.ts"],
    }),
  );
  writeFileSync(
    join(app, "app.ts"),
    `import { Annotation, START, END, StateGraph } from "@langchain/langgraph";
import { EdgeweaveSaver, EdgeweaveStore, EdgeweaveError } from "edgeweave/langgraph";
const checkpointer = new EdgeweaveSaver({ baseUrl: "http://localhost:8787", apiKey: "k" });
const store = new EdgeweaveStore({ baseUrl: "http://localhost:8787", apiKey: "k" });
const State = Annotation.Root({ n: Annotation<number>() });
export const graph = new StateGraph(State).addNode("a", () => ({ n: 1 })).addEdge(START, "a").addEdge("a", END).compile({ checkpointer, store });
export const isError = (e: unknown): e is EdgeweaveError => e instanceof EdgeweaveError;
`,
  );
  writeFileSync(
    join(app, "load.mjs"),
    `import { EdgeweaveSaver, EdgeweaveStore } from "edgeweave/langgraph";\nnew EdgeweaveSaver({ baseUrl: "http://x", apiKey: "k" }); new EdgeweaveStore({ baseUrl: "http://x", apiKey: "k" });\nconsole.log("loaded");\n`,
  );
  run(process.execPath, [join(repo, "node_modules", "typescript", "bin", "tsc"), "-p", app], app);
  const loaded = run(process.execPath, ["load.mjs"], app).trim();
  if (loaded !== "loaded") throw new Error(`loading under Node printed: ${loaded}`);
  console.log(`ok: ${packed[0]!.filename} (${files.length} files) installs, type-checks and loads as edgeweave/langgraph`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
