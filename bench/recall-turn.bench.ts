import { env, exports } from "cloudflare:workers";
import { expect, it } from "vitest";
import { agentByName } from "../src/routing/bundled";
import { median, report } from "./thread-support";

/**
 * A whole turn with recall on vs the same build with `recall: false`, in the same run: the shipped
 * `support` agent (trim 4,000) on the offline model, over two identical threads holding one LoCoMo
 * conversation each (two such pairs, created so that each mode has an early and a late thread), asked
 * LoCoMo's questions alternately. Only the agent's recall setting differs
 * (switched on the bundled agent between the two halves of each pair). Workerd's clock moves in whole
 * milliseconds here, so beside the p50s the ratio of the interquartile means is reported too (a
 * mean of whole-millisecond samples is not stuck to the grid the way a median is), and the median of
 * each question's own on/off ratio (its two turns run back to back, so a burst of load elsewhere on
 * the machine slows both). The turns are spread over four keys of the tenant: each key's rate limit
 * (600 a minute) stays out of the way.
 */
type Turn = { role: "user" | "assistant"; content: string; created_at: number };
const convs = JSON.parse((env as unknown as { LOCOMO: string }).LOCOMO) as { turns: Turn[]; questions: string[] }[];
const OPERATOR = "test-operator-key";

async function call(path: string, key: string, body: unknown): Promise<Response> {
  return exports.default.fetch(`http://x${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

it("a support turn with recall on vs recall: false", async () => {
  const tenant = `bench-${crypto.randomUUID().slice(0, 8)}`;
  expect((await call("/v1/admin/tenants", OPERATOR, { id: tenant })).status).toBe(201);
  const keys: string[] = [];
  for (let k = 0; k < 4; k++) keys.push(((await (await call(`/v1/admin/tenants/${tenant}/keys`, OPERATOR, { role: "admin" })).json()) as { key: string }).key);
  const key = keys[0]!;
  const conv = convs[0]!;
  // Two pairs of threads, created in the order on, off, off, on: a thread made earlier in the run measured up
  // to 0.6 ms slower whatever it ran (recall on in both threads gave IQM ratios 1.00–1.06), so each mode gets
  // one early and one late thread; question i asks pair ⌊i/2⌋ mod 2, so each pair also sees both orders of its two turns.
  const pairsOf = [
    { on: `turn-on-a-${tenant}`, off: `turn-off-a-${tenant}` },
    { off: `turn-off-b-${tenant}`, on: `turn-on-b-${tenant}` },
  ];
  for (const t of pairsOf.flatMap((p) => Object.values(p))) {
    for (let i = 0; i < conv.turns.length; i += 500) {
      expect((await call(`/v1/threads/${t}/state`, key, { ops: [{ op: "append", messages: conv.turns.slice(i, i + 500) }] })).status).toBe(200);
    }
  }
  const agent = agentByName("support")!;
  const configured = agent.recall;
  const ms = { on: [] as number[], off: [] as number[] };
  const pairs: number[] = [];
  // Each mode's mean per Server-Timing phase (whole milliseconds per turn, so only their means say anything).
  const phases = { on: new Map<string, number>(), off: new Map<string, number>() };
  let recalledTurns = 0;
  const questions = convs.flatMap((c) => c.questions).slice(0, 320);
  try {
    for (const [i, q] of questions.entries()) {
      const took = { on: 0, off: 0 };
      for (const mode of i % 2 ? (["on", "off"] as const) : (["off", "on"] as const)) {
        (agent as { recall: typeof configured }).recall = mode === "on" ? { share: 0.75, neighbours: 1 } : false;
        const t0 = performance.now();
        const res = await call("/v1/chat/completions", keys[i % keys.length]!, {
          model: "offline-echo",
          agent: "support",
          thread_id: pairsOf[Math.floor(i / 2) % 2]![mode],
          messages: [{ role: "user", content: q }],
        });
        const body = (await res.json()) as { edgeweave?: { memory?: { recalled?: unknown[] } } };
        const t = performance.now() - t0;
        expect(res.status).toBe(200);
        if (mode === "on") recalledTurns += body.edgeweave?.memory?.recalled?.length ?? 0;
        took[mode] = t;
        if (i >= 10) {
          ms[mode].push(t);
          for (const part of (res.headers.get("server-timing") ?? "").split(",")) {
            const [name, dur] = part.trim().split(";dur=");
            if (name && dur) phases[mode].set(name, (phases[mode].get(name) ?? 0) + Number(dur));
          }
        }
      }
      if (i >= 10 && took.off > 0) pairs.push(took.on / took.off);
    }
  } finally {
    (agent as { recall: typeof configured }).recall = configured;
  }
  expect(recalledTurns).toBeGreaterThan(0);
  const iqm = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    const mid = s.slice(Math.floor(s.length / 4), s.length - Math.floor(s.length / 4));
    return mid.reduce((a, b) => a + b, 0) / mid.length;
  };
  report("recall-turn", {
    turns: ms.on.length,
    thread_messages: conv.turns.length,
    recall_on_p50_ms: Number(median(ms.on).toFixed(2)),
    recall_off_p50_ms: Number(median(ms.off).toFixed(2)),
    ratio: Number((median(ms.on) / median(ms.off)).toFixed(3)),
    recall_on_iqm_ms: Number(iqm(ms.on).toFixed(2)),
    recall_off_iqm_ms: Number(iqm(ms.off).toFixed(2)),
    iqm_ratio: Number((iqm(ms.on) / iqm(ms.off)).toFixed(3)),
    paired_ratio_p50: Number(median(pairs).toFixed(3)),
    mean_recalled_turns: Number((recalledTurns / questions.length).toFixed(1)),
    ...Object.fromEntries(
      [...new Set([...phases.on.keys(), ...phases.off.keys()])].map((n) => [
        `phase_${n}_ms_on_off`,
        `${((phases.on.get(n) ?? 0) / ms.on.length).toFixed(2)} / ${((phases.off.get(n) ?? 0) / ms.off.length).toFixed(2)}`,
      ]),
    ),
  });
});
