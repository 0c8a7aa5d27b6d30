// The worker as a browser app built on LangGraph's clients meets it: `wrangler dev` on loopback with a fresh
// local state, CORS open to the app's origin, and the shipped models.yaml with gpt-4o-mini served by a
// fake OpenAI upstream (fake-openai-server.ts) that streams slowly enough to watch and to stop. Seeds a
// tenant and an admin key. Used by test/e2e/langgraph-react.e2e.ts and scripts/agent-chat-ui.ts.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse, stringify } from "yaml";
import { freePort, run, startWranglerDev } from "../../bench/support/wrangler-dev";
import { startFakeOpenAI } from "./fake-openai-server";

const ROOT = new URL("../..", import.meta.url).pathname;
const ARTIFACTS = join(ROOT, "test-artifacts");
const CONFIG = "wrangler.e2e-langgraph.toml";
const MODELS = join(ARTIFACTS, "langgraph-e2e.models.yaml");
const OPERATOR_KEY = "e2e-langgraph-operator";

export type LangGraphWorker = {
  /** The worker's origin. */
  url: string;
  /** LangGraph's API on it: the SDK's apiUrl. */
  apiUrl: string;
  /** A tenant admin key. */
  key: string;
  /** Requests that reached the fake model. */
  upstream: Awaited<ReturnType<typeof startFakeOpenAI>>["seen"];
  stop(): Promise<void>;
};

/** Ports of the caller's (E2E_PORT, then the next ones), else free ones. */
export const portAt = async (i: number): Promise<number> => (process.env.E2E_PORT ? Number(process.env.E2E_PORT) + i : freePort());

type ModelsFile = { default_model: string; models: { name: string; provider_config?: Record<string, unknown> }[] };

/** models.yaml with gpt-4o-mini on the fake (the default model; the others have no secret, so the router skips them). */
function writeModels(upstream: string): void {
  const models = parse(readFileSync(join(ROOT, "models.yaml"), "utf8")) as ModelsFile;
  const mini = models.models.find((m) => m.name === "gpt-4o-mini");
  if (!mini) throw new Error("models.yaml has no gpt-4o-mini");
  mini.provider_config = { ...mini.provider_config, base_url: `${upstream}/v1` };
  models.default_model = "gpt-4o-mini";
  writeFileSync(MODELS, stringify(models));
  const config = readFileSync(join(ROOT, "wrangler.toml"), "utf8").replace(
    /\[build\]\ncommand = "npm run build:worker"/,
    `[build]\ncommand = "tsx scripts/compile-models.ts ${MODELS} && npm run build:assets"`,
  );
  if (!config.includes(MODELS)) throw new Error("wrangler.toml's [build] command is not the one this harness replaces");
  writeFileSync(join(ROOT, CONFIG), config);
}

export async function startLangGraphWorker(opts: { corsOrigin: string; wordDelayMs: number; firstPort: number }): Promise<LangGraphWorker> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const fake = await startFakeOpenAI({ wordDelayMs: opts.wordDelayMs, port: await portAt(opts.firstPort + 2) });
  const persist = mkdtempSync(join(tmpdir(), "edgeweave-langgraph-e2e-"));
  const cleanup = async () => {
    await fake.close();
    rmSync(persist, { recursive: true, force: true });
    rmSync(join(ROOT, CONFIG), { force: true });
    // The e2e models were compiled into src/routing; put the shipped ones back.
    spawnSync(join(ROOT, "node_modules", ".bin", "tsx"), [join(ROOT, "scripts", "compile-models.ts")], { cwd: ROOT, stdio: "ignore" });
  };
  try {
    writeModels(fake.url);
    await run("npx", ["wrangler", "d1", "migrations", "apply", "DB", "--local", "--config", CONFIG, "--persist-to", persist]);
    const worker = await startWranglerDev({
      config: CONFIG,
      persistTo: persist,
      port: await portAt(opts.firstPort),
      inspectorPort: await portAt(opts.firstPort + 1),
      vars: { OPERATOR_KEY, OPENAI_API_KEY: "sk-e2e-fake", CORS_ORIGINS: opts.corsOrigin },
    });
    const admin = async <T>(path: string, body: unknown): Promise<T> => {
      const res = await fetch(worker.url + path, {
        method: "POST",
        headers: { authorization: `Bearer ${OPERATOR_KEY}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      if (!res.ok) throw new Error(`${path} → ${res.status} ${await res.text()}`);
      return (await res.json()) as T;
    };
    const tenant = `lg-${Date.now().toString(36)}`;
    await admin("/v1/admin/tenants", { id: tenant, name: "LangGraph e2e" });
    const { key } = await admin<{ key: string }>(`/v1/admin/tenants/${tenant}/keys`, { role: "admin", name: "langgraph e2e" });
    return {
      url: worker.url,
      apiUrl: `${worker.url}/v1/agent-protocol`,
      key,
      upstream: fake.seen,
      stop: async () => {
        await worker.stop();
        await cleanup();
      },
    };
  } catch (e) {
    await cleanup();
    throw e;
  }
}
