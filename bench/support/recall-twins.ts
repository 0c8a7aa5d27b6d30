// Benches that measure recall's cost run one build serving agents that differ only in `recall`:
// models.yaml plus the bench's agents is compiled into src/routing/models.generated.ts for the run
// (and compiled back from models.yaml afterwards; run from the checkout's root), and `wrangler dev` runs a copy of the config
// without [build], which would compile models.yaml again over them.
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseDocument, type YAMLMap, type YAMLSeq } from "yaml";
import { run } from "./wrangler-dev.ts";

/** An agent added for the run: a copy of `from` (a shipped agent) or a new one, with these fields set. */
export type BenchAgent = { name: string; from?: string; set: Record<string, unknown> };

/** models.yaml with `agents` added. */
function modelsWith(root: string, agents: BenchAgent[]): string {
  const doc = parseDocument(readFileSync(join(root, "models.yaml"), "utf8"));
  const list = doc.get("agents") as YAMLSeq<YAMLMap>;
  for (const a of agents) {
    const base = a.from === undefined ? undefined : list.items.find((x) => x.get("name") === a.from);
    if (a.from !== undefined && !base) throw new Error(`models.yaml has no ${a.from} agent`);
    const agent = base ? (base.clone() as YAMLMap) : (doc.createNode({}) as YAMLMap);
    agent.set("name", a.name);
    for (const [k, v] of Object.entries(a.set)) agent.set(k, doc.createNode(v));
    list.add(agent);
  }
  return doc.toString();
}

/**
 * Compiles models.yaml with `agents` into the build and writes `configName` (wrangler.toml without
 * [build], with `edit` applied); `restore` removes the config and compiles the shipped models back.
 */
export async function buildWithAgents(
  root: string,
  tmp: string,
  configName: string,
  agents: BenchAgent[],
  edit: (toml: string) => string = (t) => t,
): Promise<{ restore: () => Promise<void> }> {
  const models = join(tmp, "models.yaml");
  writeFileSync(models, modelsWith(root, agents));
  writeFileSync(join(root, configName), edit(readFileSync(join(root, "wrangler.toml"), "utf8").replace(/\[build\][^[]*/, "")));
  const restore = async () => {
    rmSync(join(root, configName), { force: true });
    await run("npx", ["tsx", "scripts/compile-models.ts"]);
  };
  try {
    await run("npx", ["tsx", "scripts/compile-models.ts", models]);
  } catch (e) {
    await restore();
    throw e;
  }
  return { restore };
}
