// The set-up bench/turn-latency.ts and bench/profile-turn.ts share: a zero-latency fake Ollama,
// edgeweave and the pass-through worker under `wrangler dev`, a tenant with 10 facts and a
// 1,000-message thread.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startFakeOllama } from "./fake-ollama-server.ts";
import { type BenchAgent, buildWithAgents } from "./recall-twins.ts";
import { run, startWranglerDev, type DevServer } from "./wrangler-dev.ts";

const OPERATOR = "bench-operator-key";
const BENCH_CONFIG = "wrangler.bench.toml";

export async function json(url: string, init: { key?: string; body?: unknown; method?: string } = {}): Promise<unknown> {
  const res = await fetch(url, {
    method: init.method ?? (init.body === undefined ? "GET" : "POST"),
    headers: { "content-type": "application/json", ...(init.key ? { authorization: `Bearer ${init.key}` } : {}) },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${init.method ?? "POST"} ${url}: ${res.status} ${text.slice(0, 300)}`);
  return text ? JSON.parse(text) : null;
}

const filler = "The quick brown fox jumps over the lazy dog. ".repeat(4);
/** The 1,000 messages every bench thread (and the floors' threads) starts with. */
export const THREAD_SEED = Array.from({ length: 1000 }, (_, i) => ({ role: i % 2 ? "assistant" : "user", content: `${i}: ${filler}` }));

export type TurnBench = {
  ew: DevServer;
  pt: DevServer;
  /** The same floor worker on edgeweave's platform config (bench/passthrough/wrangler.platform.toml), when asked for. */
  ptPlatform?: DevServer;
  key: string;
  /** The 1,000 messages every bench thread starts with. */
  seed: { role: string; content: string }[];
  upstreamCalls(): number;
  /** Seeds another 1,000-message thread. */
  seedThread(thread: string): Promise<void>;
  stop(): Promise<void>;
};

/**
 * `agents`: agents added to the build for the run (bench/support/recall-twins.ts), e.g. twins that differ only in recall.
 * `ports`: edgeweave's and the pass-through's, and their inspectors' (default: any free ones), for a bench told which ports it may use.
 */
export async function startTurnBench(
  opts: {
    inspectorPort?: number;
    platformFloor?: boolean;
    agents?: BenchAgent[];
    ports?: { edgeweave: number; passthrough: number; inspectors: [number, number] };
  } = {},
): Promise<TurnBench> {
  const persist = mkdtempSync(join(tmpdir(), "edgeweave-bench-"));
  // Same config, rate limits lifted so the benchmark measures the turn, not the limiter.
  // BENCH_NO_ASSETS=1: without the static-assets layer, which `wrangler dev` runs as a separate router worker in front of this one.
  const edit = (toml: string) => {
    const lifted = toml.replace(/limit = \d+/g, "limit = 1000000");
    return process.env.BENCH_NO_ASSETS ? lifted.replace(/\[assets\][^[]*/, "") : lifted;
  };
  let restore = async () => rmSync(BENCH_CONFIG, { force: true });
  if (opts.agents) ({ restore } = await buildWithAgents(".", persist, BENCH_CONFIG, opts.agents, edit));
  else writeFileSync(BENCH_CONFIG, edit(readFileSync("wrangler.toml", "utf8")));
  const upstream = await startFakeOllama();
  const servers: DevServer[] = [];
  const stop = async () => {
    for (const s of servers) await s.stop();
    await upstream.close();
    await restore();
    rmSync(persist, { recursive: true, force: true });
  };
  try {
    await run("npx", ["wrangler", "d1", "migrations", "apply", "DB", "--local", "--config", BENCH_CONFIG, "--persist-to", persist]);
    const ew = await startWranglerDev({
      config: BENCH_CONFIG,
      persistTo: persist,
      vars: { OPERATOR_KEY: OPERATOR },
      inspectorPort: opts.inspectorPort ?? opts.ports?.inspectors[0],
      port: opts.ports?.edgeweave,
    });
    servers.push(ew);
    const pt = await startWranglerDev({
      config: "bench/passthrough/wrangler.toml",
      persistTo: persist,
      readyPath: "/",
      port: opts.ports?.passthrough,
      inspectorPort: opts.ports?.inspectors[1],
    });
    servers.push(pt);
    const ptPlatform = opts.platformFloor
      ? await startWranglerDev({ config: "bench/passthrough/wrangler.platform.toml", persistTo: persist, readyPath: "/" })
      : undefined;
    if (ptPlatform) servers.push(ptPlatform);

    const tenant = `bench-${Date.now()}`;
    await json(`${ew.url}/v1/admin/tenants`, { key: OPERATOR, body: { id: tenant } });
    const { key } = (await json(`${ew.url}/v1/admin/tenants/${tenant}/keys`, { key: OPERATOR, body: { role: "admin" } })) as { key: string };
    for (let i = 0; i < 10; i++) {
      await json(`${ew.url}/v1/memory/facts`, {
        key,
        body: { scope: "organization:acme", kind: "rule", text: `Rule ${i}: keep answers under ${i + 3} sentences.` },
      });
    }
    const seed = THREAD_SEED;
    const seedThread = async (thread: string) => {
      await json(`${ew.url}/v1/threads/${thread}/state`, { key, body: { ops: [{ op: "append", messages: seed }] } });
    };
    return { ew, pt, ...(ptPlatform ? { ptPlatform } : {}), key, seed, upstreamCalls: upstream.calls, seedThread, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

/**
 * A stateful turn's body: no agent middleware, so the thread keeps its 1,000+ messages;
 * the facts come from a scope the key grants.
 */
export const turnBody = (thread: string, i = 0, stream = false) => ({
  model: "llama3.2",
  memory_scopes: ["session", "organization:acme"],
  thread_id: thread,
  messages: [{ role: "user", content: `Question ${i}?` }],
  ...(stream ? { stream: true } : {}),
});
