import { runInDurableObject } from "cloudflare:test";
import { it } from "vitest";
import type { ThreadDO } from "../src/object/thread-object";
import { line, logOf, mustUpdate, report, stubFor } from "./thread-support";

/**
 * Stored bytes per turn (user input + assistant reply as one update/checkpoint)
 * when the thread holds 100 vs 10,000 turns, from the SQLite file size.
 * Goal: ratio <= 1.1 (checkpoints store deltas, so a turn costs O(turn)).
 */
const WINDOW = 300; // turns per measurement; the file grows in 4 KiB pages

it("bytes per turn: 100 vs 10,000 turns", async () => {
  await runInDurableObject(stubFor("storage"), (_instance: ThreadDO, state: DurableObjectState) => {
    const log = logOf(state.storage);
    let turns = 0;
    const turn = () => {
      mustUpdate(log, {
        ops: [
          {
            op: "append",
            messages: [
              { role: "user", content: line(turns) },
              { role: "assistant", content: line(turns + 1) },
            ],
          },
        ],
      });
      turns++;
    };
    const bytesPerTurnFrom = (start: number) => {
      while (turns < start) turn();
      const before = state.storage.sql.databaseSize;
      for (let i = 0; i < WINDOW; i++) turn();
      return (state.storage.sql.databaseSize - before) / WINDOW;
    };
    const at100 = bytesPerTurnFrom(100);
    const at10k = bytesPerTurnFrom(10_000);
    report("thread-bytes-per-turn", {
      turn_payload_bytes: 2 * line(0).length,
      bytes_per_turn_at_100: Math.round(at100),
      bytes_per_turn_at_10000: Math.round(at10k),
      ratio: +(at10k / at100).toFixed(3),
      goal: "<= 1.1",
      total_turns: turns,
      db_bytes: state.storage.sql.databaseSize,
    });
  });
});
