import { runInDurableObject } from "cloudflare:test";
import { it } from "vitest";
import type { ThreadDO } from "../src/object/thread-object";
import { line, logOf, median, mustUpdate, report, seedMessages, stubFor } from "./thread-support";

/**
 * The save of one stateful chat turn in its thread's object, as a run makes it (pipeline/save-turn.ts):
 * the question and the reply as two appends, with the ids the run gave them, and the routing record
 * as a `last_route` channel set, in one update, on a 1,000-message thread (the recall index's triggers
 * included). Times SAVES saves one after another in one object: no RPC, no lease, only the store.
 * Run the same file on two checkouts to compare builds:
 *   npx vitest run -c bench/thread-vitest.config.ts bench/thread-save.bench.ts
 */
const SAVES = Number(process.env.BENCH_SAVES ?? 400);
const ROUNDS = 5;

it(`a turn's save on a 1,000-message thread (${ROUNDS} rounds of ${SAVES})`, async () => {
  await runInDurableObject(stubFor("save"), (_instance: ThreadDO, state) => {
    const log = logOf(state.storage);
    seedMessages(log, 1000);
    let n = 0;
    const save = () => {
      n++;
      mustUpdate(log, {
        ops: [
          { op: "append", messages: [{ role: "user", content: `Question ${n}? ${line(n).slice(0, 40)}`, id: `q${n}` }] },
          { op: "append", messages: [{ role: "assistant", content: line(n), id: `a${n}` }] },
          { op: "set", channel: "last_route", reducer: "last_value", value: { model: "llama3.2", reason: "llama3.2: model_override", candidate_count: 1, n } },
        ],
      });
    };
    for (let i = 0; i < 50; i++) save(); // warm-up
    const perSave: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const t0 = performance.now();
      for (let i = 0; i < SAVES; i++) save();
      perSave.push((performance.now() - t0) / SAVES);
    }
    report("thread-save", {
      saves: SAVES * ROUNDS,
      median_round_ms_per_save: +median(perSave).toFixed(4),
      rounds: perSave.map((x) => +x.toFixed(4)).join(" "),
    });
  });
});
