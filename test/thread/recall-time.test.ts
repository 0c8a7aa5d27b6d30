import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { namedSpan, saidWithin } from "../../src/thread/recall-time";
import { ThreadStore } from "../../src/thread/thread-store";
import { unique } from "./support";

/**
 * Recall by time (src/thread/recall-time.ts): an input naming a date prefers the earlier turns said
 * then. Two trips told in the same words, one in June and one in September: asked about June, the
 * June one is recalled first; asked with no date, the newer one, as before.
 */

const at = (y: number, m: number, d: number) => Date.UTC(y, m - 1, d, 18);

/** An append op's messages (each dated). */
type Dated = { id?: string; role: "user" | "assistant"; content: string; created_at: number };

function thread(): Dated[] {
  const out: Dated[] = [];
  const filler = (n: number, when: number) => {
    for (let i = 0; i < n; i++)
      out.push({ role: out.length % 2 ? "assistant" : "user", content: `The office plants were watered again (${out.length}).`, created_at: when });
  };
  filler(40, at(2023, 6, 1));
  out.push({ id: "june", role: "user", content: "We went camping by the lake, the kids loved the campfire there.", created_at: at(2023, 6, 12) });
  filler(40, at(2023, 6, 12));
  out.push({ id: "september", role: "user", content: "We went camping by the lake, the kids loved the campfire again.", created_at: at(2023, 9, 3) });
  filler(80, at(2023, 9, 3));
  return out;
}

/** The scores the two trips are recalled with for `query`, by words alone. */
async function scores(query: string): Promise<{ june?: number; september?: number }> {
  const stub = env.THREADS.get(env.THREADS.idFromName(unique("recall-time")));
  return runInDurableObject(stub, (_live, state) => {
    const store = ThreadStore.of(state.storage);
    store.update({ ops: [{ op: "append", messages: thread() }] }, "update");
    const r = store.recent(600, { recall: { query, share: 0.75, neighbours: 0, channels: ["full_text"] } });
    return Object.fromEntries((r.recalled ?? []).filter((t) => t.why === "match").map((t) => [t.message.id, t.score]));
  });
}

describe("recall by time", () => {
  it("a question naming a date ranks the turn said then above the same words said another time", async () => {
    for (const q of [
      "Where did the kids go camping in June?",
      "Where did the kids go camping on 12 June, 2023?",
      "Where did they camp in the week of June 10th 2023?",
    ]) {
      const s = await scores(q);
      expect(s.june, q).toBeGreaterThan(s.september!);
    }
    const september = await scores("Where did the kids go camping in September?");
    expect(september.september).toBeGreaterThan(september.june!);
    // No date, or another year's June: the words alone decide (the two score alike).
    for (const q of ["Where did the kids go camping?", "Where did the kids go camping in June 2021?"]) {
      const s = await scores(q);
      expect(s.june, q).toBe(s.september);
    }
  });

  it("reads the dates people write, and nothing else as one", () => {
    const day = (y: number, m: number, d: number) => Date.UTC(y, m - 1, d);
    expect(namedSpan("What movie did Joanna watch on 1 May, 2022?")).toEqual({ from: day(2022, 5, 1), to: day(2022, 5, 2), everyYear: false });
    expect(namedSpan("What did she do on May 1st 2022?")).toEqual({ from: day(2022, 5, 1), to: day(2022, 5, 2), everyYear: false });
    expect(namedSpan("Where did Joanna travel to in July 2022?")).toEqual({ from: day(2022, 7, 1), to: day(2022, 8, 1), everyYear: false });
    expect(namedSpan("When did Melanie go camping in June?")).toEqual({ from: day(2000, 6, 1), to: day(2000, 7, 1), everyYear: true });
    expect(namedSpan("the 3rd of June")).toEqual({ from: day(2000, 6, 3), to: day(2000, 6, 4), everyYear: true });
    for (const none of ["May I ask what you did?", "We will march on", "", "🚲", "August is a name", "99 March"]) expect(namedSpan(none)).toBeUndefined();
    const june = namedSpan("in June")!;
    expect(saidWithin(june, at(2019, 6, 30))).toBe(true);
    expect(saidWithin(june, at(2019, 7, 5))).toBe(true); // the week after
    expect(saidWithin(june, at(2019, 7, 9))).toBe(false);
    expect(saidWithin(june, at(2019, 5, 31))).toBe(false);
  });
});
