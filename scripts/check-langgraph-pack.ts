/**
 * The package edgeweave/langgraph (langgraph/, built from src/langgraph-client) installs and loads
 * the three ways the README says, as ES modules and as CommonJS:
 * 1. its committed build (langgraph/dist) is what scripts/build-langgraph.ts makes now;
 * 2. from a tarball: `npm pack ./langgraph` holds the build, its own README and LICENSE and no
 *    source, depends on nothing and names LangGraph as its peers;
 * 3. from git: `npm install git+file://<this repository>#<HEAD>` (as `git+https://…` would) installs
 *    the root manifest's export of the same build, building nothing and fetching nothing.
 * Each install is type-checked (NodeNext, so the `exports` map and its types are what is used),
 * then imported and required under Node. The app's LangGraph packages are linked from this
 * repository's node_modules, as an app that uses LangGraph already has them.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { buildLangGraph } from "./build-langgraph.ts";

const repo = resolve(import.meta.dirname, "..");
const pkgDir = join(repo, "langgraph");
const dir = mkdtempSync(join(tmpdir(), "edgeweave-pack-"));
const run = (cmd: string, args: string[], cwd: string) => execFileSync(cmd, args, { cwd, stdio: ["ignore", "pipe", "inherit"] }).toString();
const files = (root: string): string[] =>
  readdirSync(root, { recursive: true, encoding: "utf8" })
    .filter((f) => statSync(join(root, f)).isFile())
    .sort();

/** An app that imports (app.ts) and requires (app.cts) edgeweave/langgraph, type-checked and run under Node. */
function checkApp(app: string, how: string): void {
  for (const [name, target] of [
    ["@langchain", join(repo, "node_modules", "@langchain")],
    ["@types", join(repo, "node_modules", "@types")],
  ] as const) {
    symlinkSync(target, join(app, "node_modules", name));
  }
  writeFileSync(
    join(app, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: { target: "es2022", module: "nodenext", moduleResolution: "nodenext", strict: true, noEmit: true, skipLibCheck: true, types: ["node"] },
      files: ["app.ts", "app.cts"],
    }),
  );
  writeFileSync(
    join(app, "app.ts"),
    `import { Annotation, START, END, StateGraph } from "@langchain/langgraph";
import { EdgeweaveSaver, EdgeweaveStore, EdgeweaveError } from "edgeweave/langgraph";
const checkpointer = new EdgeweaveSaver({ baseUrl: "http://localhost:8787", apiKey: "k", retry: { maxRetries: 1 } });
const store = new EdgeweaveStore({ baseUrl: "http://localhost:8787", apiKey: "k" });
const State = Annotation.Root({ n: Annotation<number>() });
export const graph = new StateGraph(State).addNode("a", () => ({ n: 1 })).addEdge(START, "a").addEdge("a", END).compile({ checkpointer, store });
export const isError = (e: unknown): e is EdgeweaveError => e instanceof EdgeweaveError;
export const prune = () => checkpointer.prune("t", { keepLast: 1 });
`,
  );
  writeFileSync(
    join(app, "app.cts"),
    `import lg = require("edgeweave/langgraph");\nexport const saver: lg.EdgeweaveSaver = new lg.EdgeweaveSaver({ baseUrl: "http://x", apiKey: "k" });\n`,
  );
  const load = `new EdgeweaveSaver({ baseUrl: "http://x", apiKey: "k" }); new EdgeweaveStore({ baseUrl: "http://x", apiKey: "k" });`;
  writeFileSync(join(app, "load.mjs"), `import { EdgeweaveSaver, EdgeweaveStore } from "edgeweave/langgraph";\n${load}\nconsole.log("imported");\n`);
  writeFileSync(join(app, "load.cjs"), `const { EdgeweaveSaver, EdgeweaveStore } = require("edgeweave/langgraph");\n${load}\nconsole.log("required");\n`);
  run(process.execPath, [join(repo, "node_modules", "typescript", "bin", "tsc"), "-p", app], app);
  for (const [file, said] of [
    ["load.mjs", "imported"],
    ["load.cjs", "required"],
  ] as const) {
    const out = run(process.execPath, [file], app).trim();
    if (out !== said) throw new Error(`${how}: loading ${file} under Node printed: ${out}`);
  }
}

function newApp(name: string): string {
  const app = join(dir, name);
  mkdirSync(join(app, "node_modules"), { recursive: true });
  writeFileSync(join(app, "package.json"), JSON.stringify({ name: "app", private: true, type: "module" }));
  return app;
}

try {
  // 1. The committed build is current.
  const fresh = join(dir, "fresh");
  buildLangGraph(fresh);
  const committed = join(pkgDir, "dist");
  const stale = [...new Set([...files(fresh), ...files(committed)])].filter((f) => {
    try {
      return !readFileSync(join(fresh, f)).equals(readFileSync(join(committed, f)));
    } catch {
      return true;
    }
  });
  if (stale.length > 0) throw new Error(`langgraph/dist is out of date (${stale.join(", ")}): run npm run build:langgraph and commit it`);

  // 2. The tarball.
  const packed = JSON.parse(run("npm", ["pack", "./langgraph", "--json", "--pack-destination", dir], repo)) as {
    filename: string;
    files: { path: string; size: number }[];
  }[];
  const tarball = join(dir, packed[0]!.filename);
  const inTarball = packed[0]!.files.map((f) => f.path).sort();
  const expected = ["LICENSE", "README.md", "package.json", ...files(committed).map((f) => `dist/${f}`)].sort();
  if (inTarball.join() !== expected.join()) throw new Error(`unexpected tarball contents: ${inTarball.join(", ")}`);
  const readme = packed[0]!.files.find((f) => f.path === "README.md")!;
  if (readme.size > 8_000) throw new Error(`the package README is ${readme.size} bytes: it should be the package's own, not the Worker's`);
  const app = newApp("from-tarball");
  const pkg = join(app, "node_modules", "edgeweave");
  mkdirSync(pkg, { recursive: true });
  run("tar", ["-xzf", tarball, "-C", pkg, "--strip-components=1"], dir);
  const manifest = JSON.parse(readFileSync(join(pkg, "package.json"), "utf8")) as {
    private?: boolean;
    license?: string;
    dependencies?: object;
    peerDependencies?: Record<string, string>;
  };
  const peers = Object.keys(manifest.peerDependencies ?? {}).sort();
  if (
    manifest.private ||
    !manifest.license ||
    Object.keys(manifest.dependencies ?? {}).length > 0 ||
    peers.join() !== "@langchain/core,@langchain/langgraph-checkpoint"
  ) {
    throw new Error(`the package should be publishable, licensed, depend on nothing and name LangGraph as peers: ${JSON.stringify(manifest)}`);
  }
  checkApp(app, "tarball");

  // 3. Git: the repository at its HEAD commit, as `npm install git+https://…` would get it. npm
  // prepares a git dependency whose manifest has one of these scripts by first installing all of its
  // development dependencies (pacote's git fetcher): every app's install would fetch the Worker's toolchain.
  const rootScripts = Object.keys((JSON.parse(readFileSync(join(repo, "package.json"), "utf8")) as { scripts?: object }).scripts ?? {});
  const preparing = rootScripts.filter((s) => ["preinstall", "install", "postinstall", "build", "prepack", "prepare"].includes(s));
  if (preparing.length > 0) throw new Error(`the root manifest's ${preparing.join(", ")} script(s) make npm install every dev dependency on a git install`);
  const head = run("git", ["rev-parse", "HEAD"], repo).trim();
  const fromGit = newApp("from-git");
  run("npm", ["install", "--offline", "--no-audit", "--no-fund", "--legacy-peer-deps", "--loglevel=error", `git+file://${repo}#${head}`], fromGit);
  const installed = join(fromGit, "node_modules", "edgeweave");
  const gitFiles = files(installed).filter((f) => !f.startsWith("node_modules"));
  if (!gitFiles.includes(join("langgraph", "dist", "cjs", "index.js")) || gitFiles.some((f) => f.startsWith("src"))) {
    throw new Error(`the git install holds: ${gitFiles.map((f) => relative(installed, join(installed, f))).join(", ")}`);
  }
  checkApp(fromGit, "git");
  console.log(
    `ok: ${packed[0]!.filename} (${inTarball.length} files) and git+file://…#${head.slice(0, 8)} install, type-check, import and require as edgeweave/langgraph`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
