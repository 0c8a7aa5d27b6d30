// Issue 21's cost of recall measured from outside: whole turns through `wrangler dev`, timed by the
// client's clock (sub-millisecond, where bench/recall-turn.bench.ts inside workerd sees whole
// milliseconds). One build serves two agents that differ only in recall: the shipped `support` and a
// copy of it with `recall: false` (`support-norecall`), compiled from models.yaml plus that copy into
// src/routing/models.generated.ts for the run and compiled back from models.yaml afterwards. Two
// pairs of threads each hold the first LoCoMo conversation (created on, off, off, on, so each mode
// has an early and a late thread); LoCoMo's questions are asked alternately, each question's two
// turns back to back in alternating order, on the offline model.
//   npx tsx bench/recall-turn-http.ts [questions]       (default 320; LOCOMO_DIR as bench/locomo)
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { loadConversations, locomoDir } from "./locomo/data.ts";
import { buildWithAgents } from "./support/recall-twins.ts";
import { json } from "./support/turn-setup.ts";
import { percentile, run, startWranglerDev } from "./support/wrangler-dev.ts";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const QUESTIONS = Number(process.argv[2] ?? 320);
const CONFIG = "wrangler.recall-bench.toml";
const OPERATOR = "recall-bench-operator";

const iqm = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.slice(Math.floor(s.length / 4), s.length - Math.floor(s.length / 4));
  return mid.reduce((a, b) => a + b, 0) / mid.length;
};

async function main() {
  const conv = loadConversations(locomoDir(ROOT))[0]!;
  const turns = conv.turns.map((t) => ({ role: t.speaker === conv.speakerA ? "user" : "assistant", content: `${t.speaker}: ${t.text}`, created_at: t.at }));
  const questions = loadConversations(locomoDir(ROOT))
    .flatMap((c) => c.questions.filter((q) => q.category >= 1 && q.category <= 4).map((q) => q.question))
    .slice(0, QUESTIONS);
  const tmp = mkdtempSync(join(tmpdir(), "edgeweave-recall-bench-"));
  // The shipped `support` and a copy of it that does not recall: the only difference between the two modes. Rate limits lifted.
  const build = await buildWithAgents(ROOT, tmp, CONFIG, [{ name: "support-norecall", from: "support", set: { recall: false } }], (t) =>
    t.replace(/limit = \d+/g, "limit = 1000000"),
  );
  const load = [loadavg()[0]!];
  let stop = async () => {};
  try {
    await run("npx", ["wrangler", "d1", "migrations", "apply", "DB", "--local", "--config", CONFIG, "--persist-to", tmp]);
    const dev = await startWranglerDev({
      config: CONFIG,
      persistTo: tmp,
      vars: { OPERATOR_KEY: OPERATOR, EDGEWEAVE_OFFLINE: "1", MAX_THREAD_BYTES: String(64 * 1024 * 1024) },
    });
    stop = dev.stop;
    const tenant = `bench-${Date.now()}`;
    await json(`${dev.url}/v1/admin/tenants`, { key: OPERATOR, body: { id: tenant } });
    const { key } = (await json(`${dev.url}/v1/admin/tenants/${tenant}/keys`, { key: OPERATOR, body: { role: "admin" } })) as { key: string };
    const pairsOf = [
      { on: `on-a-${tenant}`, off: `off-a-${tenant}` },
      { off: `off-b-${tenant}`, on: `on-b-${tenant}` },
    ];
    for (const t of pairsOf.flatMap((p) => Object.values(p))) {
      for (let i = 0; i < turns.length; i += 500) {
        await json(`${dev.url}/v1/threads/${t}/state`, { key, body: { ops: [{ op: "append", messages: turns.slice(i, i + 500) }] } });
      }
    }
    const ms = { on: [] as number[], off: [] as number[] };
    const pairs: number[] = [];
    // Each mode's mean per Server-Timing phase (the worker's clock: whole milliseconds, so only means say anything).
    const phases = { on: new Map<string, number>(), off: new Map<string, number>() };
    let recalled = 0;
    for (const [i, q] of questions.entries()) {
      const took = { on: 0, off: 0 };
      for (const mode of i % 2 ? (["on", "off"] as const) : (["off", "on"] as const)) {
        const t0 = performance.now();
        const res = await fetch(`${dev.url}/v1/chat/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
          body: JSON.stringify({
            model: "offline-echo",
            agent: mode === "on" ? "support" : "support-norecall",
            thread_id: pairsOf[Math.floor(i / 2) % 2]![mode],
            messages: [{ role: "user", content: q }],
          }),
        });
        const text = await res.text();
        took[mode] = performance.now() - t0;
        if (!res.ok) throw new Error(`turn ${i} (${mode}): ${res.status} ${text.slice(0, 300)}`);
        const body = JSON.parse(text) as { edgeweave?: { memory?: { recalled?: unknown[] } } };
        if (i >= 10) {
          for (const part of (res.headers.get("server-timing") ?? "").split(",")) {
            const [name, dur] = part.trim().split(";dur=");
            if (name && dur) phases[mode].set(name, (phases[mode].get(name) ?? 0) + Number(dur));
          }
        }
        const got = body.edgeweave?.memory?.recalled?.length ?? 0;
        if (mode === "off" && got > 0) throw new Error("support-norecall recalled turns: the two modes are not what they claim");
        recalled += got;
      }
      // The first ten questions warm both modes up.
      if (i < 10) continue;
      ms.on.push(took.on);
      ms.off.push(took.off);
      pairs.push(took.on / took.off);
    }
    if (recalled === 0) throw new Error("support recalled nothing: the bench would measure no recall");
    load.push(loadavg()[0]!);
    const p50 = (xs: number[]) =>
      percentile(
        [...xs].sort((a, b) => a - b),
        50,
      );
    console.log(
      JSON.stringify(
        {
          bench: "recall-turn-http",
          machine: `${cpus().length} × ${cpus()[0]?.model ?? "?"}`,
          load_avg: load.map((l) => +l.toFixed(2)),
          thread_messages: turns.length,
          questions: ms.on.length,
          mean_recalled_turns: +(recalled / questions.length).toFixed(1),
          recall_on_p50_ms: +p50(ms.on).toFixed(2),
          recall_off_p50_ms: +p50(ms.off).toFixed(2),
          p50_ratio: +(p50(ms.on) / p50(ms.off)).toFixed(3),
          iqm_ratio: +(iqm(ms.on) / iqm(ms.off)).toFixed(3),
          paired_ratio_p50: +p50(pairs).toFixed(3),
          ...Object.fromEntries(
            [...new Set([...phases.on.keys(), ...phases.off.keys()])].map((n) => [
              `phase_${n}_ms_on_off`,
              `${((phases.on.get(n) ?? 0) / ms.on.length).toFixed(2)} / ${((phases.off.get(n) ?? 0) / ms.off.length).toFixed(2)}`,
            ]),
          ),
        },
        null,
        2,
      ),
    );
  } finally {
    await stop();
    rmSync(tmp, { recursive: true, force: true });
    await build.restore();
  }
}

await main();
