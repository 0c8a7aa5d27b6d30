// What edgeweave's platform config costs per request, part by part: the context floor of
// bench/turn-latency.ts (bench/passthrough/worker.ts `POST /object-context`: the rate-limit call, one RPC,
// the thread's 1,000 messages and the question sent upstream, the turn stored in one write) under
// `wrangler dev` in several configs at once, the same worker in each, turns interleaved across them so
// machine noise hits all alike, then 8-thread rounds alternating. The configs are the bare worker
// (bench/passthrough/wrangler.toml, issue 23's floor), edgeweave's platform (wrangler.platform.toml: the
// [assets] block with run_worker_first, minify + keep_names, nodejs_compat), and the platform with one part
// taken out or the bare worker with one part added.
//   npx tsx bench/platform-floor.ts [turns=100]      # PLATFORM_VARIANTS=bare,platform,… picks some
// Prints one `PLATFORM` line: each variant's p50/p90 and its difference from the bare worker's, and its
// 8-thread req/s.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { startFakeOllama } from "./support/fake-ollama-server.ts";
import { json, THREAD_SEED } from "./support/turn-setup.ts";
import { type DevServer, percentile, startWranglerDev, timed } from "./support/wrangler-dev.ts";

const TURNS = Number(process.argv[2] ?? 100);
const LANE = 25;
const DIR = "bench/passthrough";
const bare = readFileSync(join(DIR, "wrangler.toml"), "utf8");
const platform = readFileSync(join(DIR, "wrangler.platform.toml"), "utf8");
const ASSETS = platform.slice(platform.search(/^\[assets\]/m));

const without = (toml: string, re: RegExp) => toml.replace(re, "");
// edgeweave's other bindings (wrangler.toml): the D1 database, the task queues (producer and consumers), its six
// rate limiters and the hourly cron; the floor worker touches none of them, so what they add is their mere presence.
const edgeweave = readFileSync("wrangler.toml", "utf8");
const blocks = (re: RegExp) => [...edgeweave.matchAll(re)].map((m) => m[0]).join("\n");
const BINDINGS = [
  blocks(/^\[\[d1_databases\]\][^[]*/gm).replace(/^migrations_dir.*$/m, ""),
  blocks(/^\[\[queues\.(producers|consumers)\]\][^[]*/gm),
  blocks(/^\[\[ratelimits\]\][^[]*/gm),
  blocks(/^\[triggers\]\ncrons = \[[^\]]*\]/gm),
].join("\n");
const VARIANTS: Record<string, string> = {
  bare,
  platform,
  "platform-no-assets": without(platform, /^\[assets\][^[]*/m),
  // From compatibility date 2026-08-04 Node.js compatibility is on by default (both configs' date is 2026-11-01):
  // leaving the flag out changes nothing, `no_nodejs_compat` turns it off.
  "platform-no-nodejs_compat": platform.replace(/^compatibility_flags.*$/m, 'compatibility_flags = ["no_nodejs_compat"]'),
  "platform-no-minify": without(without(platform, /^minify.*$/m), /^keep_names.*$/m),
  "platform-no-keep_names": without(platform, /^keep_names.*$/m),
  "bare+assets": `${bare}\n${ASSETS}`,
  "bare-no-nodejs_compat": bare.replace(/^(compatibility_date.*)$/m, '$1\ncompatibility_flags = ["no_nodejs_compat"]'),
  "platform+bindings": `${platform}\n${BINDINGS}`,
  "platform-date-2025-01-01": platform.replace(/^compatibility_date.*$/m, 'compatibility_date = "2025-01-01"'),
};
const picked = (process.env.PLATFORM_VARIANTS ?? Object.keys(VARIANTS).join(",")).split(",");

const seed = THREAD_SEED;
const body = { model: "llama3.2", messages: [{ role: "user", content: "Question 0?" }], stream: false };

async function main() {
  const load0 = loadavg()[0]!;
  const upstream = await startFakeOllama();
  const persist = mkdtempSync(join(tmpdir(), "platform-floor-"));
  const servers: { name: string; dev: DevServer; file: string }[] = [];
  try {
    for (const name of picked) {
      const toml = VARIANTS[name];
      if (!toml) throw new Error(`unknown variant ${name} (${Object.keys(VARIANTS).join(", ")})`);
      // Written beside worker.ts so `main` and the assets directory resolve as in the committed configs.
      const file = join(DIR, `wrangler.variant-${name}.toml`);
      writeFileSync(file, toml.replace(/^name = .*$/m, `name = "floor-${name.replace(/[^a-z0-9]+/gi, "-").toLowerCase()}"`));
      const dev = await startWranglerDev({ config: file, persistTo: join(persist, name), readyPath: "/" });
      servers.push({ name, dev, file });
    }
    const turn = (s: DevServer, t = "fc") => json(`${s.url}/object-context?thread=${t}`, { body });
    const lanes = Array.from({ length: 8 }, (_, i) => `fc-${i}`);
    for (const { dev } of servers) for (const t of ["fc", ...lanes]) await json(`${dev.url}/object-seed?thread=${t}`, { body: seed });
    for (let i = 0; i < 20; i++) for (const { dev } of servers) await turn(dev);
    const xs = servers.map(() => [] as number[]);
    for (let i = 0; i < TURNS; i++) {
      // Rotate the order each turn so no variant always follows the same one.
      for (let k = 0; k < servers.length; k++) {
        const j = (i + k) % servers.length;
        xs[j]!.push(await timed(() => turn(servers[j]!.dev)));
      }
    }
    for (const x of xs) x.sort((p, q) => p - q);
    const rate = async (s: DevServer) => {
      const t0 = performance.now();
      await Promise.all(
        lanes.map(async (l) => {
          for (let i = 0; i < LANE; i++) await turn(s, l);
        }),
      );
      return (lanes.length * LANE) / ((performance.now() - t0) / 1000);
    };
    const rs = servers.map(() => [] as number[]);
    for (const { dev } of servers) await rate(dev);
    for (let r = 0; r < 3; r++) for (let j = 0; j < servers.length; j++) rs[j]!.push(await rate(servers[j]!.dev));
    const med = (x: number[]) => [...x].sort((p, q) => p - q)[1]!;
    const bareIdx = servers.findIndex((s) => s.name === "bare");
    const base = bareIdx >= 0 ? percentile(xs[bareIdx]!, 50) : NaN;
    const out = {
      load: [+load0.toFixed(2), +loadavg()[0]!.toFixed(2)],
      turns: TURNS,
      variants: Object.fromEntries(
        servers.map((s, j) => [
          s.name,
          {
            p50: +percentile(xs[j]!, 50).toFixed(2),
            p90: +percentile(xs[j]!, 90).toFixed(2),
            vs_bare_ms: +(percentile(xs[j]!, 50) - base).toFixed(2),
            rps: +med(rs[j]!).toFixed(1),
          },
        ]),
      ),
      upstream: upstream.calls(),
    };
    console.log(`PLATFORM ${JSON.stringify(out)}`);
    for (const [name, v] of Object.entries(out.variants))
      console.log(
        `  ${name.padEnd(28)} p50 ${v.p50.toFixed(2)} ms (${v.vs_bare_ms >= 0 ? "+" : ""}${v.vs_bare_ms.toFixed(2)} vs bare), p90 ${v.p90.toFixed(2)}, 8 threads ${v.rps} req/s`,
      );
  } finally {
    for (const s of servers) {
      await s.dev.stop();
      rmSync(s.file, { force: true });
    }
    await upstream.close();
    rmSync(persist, { recursive: true, force: true });
  }
}

await main();
