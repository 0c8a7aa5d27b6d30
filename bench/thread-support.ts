import { env } from "cloudflare:workers";
import { EMBEDDED_TURNS } from "../src/embed/embedded";
import { openThreadMeta } from "../src/thread/sql-schema";
import { ThreadStore } from "../src/thread/thread-store";
import type { ThreadUpdate } from "../src/thread/types";

export const stubFor = (name: string) => env.THREADS.get(env.THREADS.idFromName(`bench:${name}-${crypto.randomUUID()}`));

/** A realistic chat line of about 200 characters (~54 tokens). */
export const line = (i: number) => `turn ${i}: ` + "the quick brown fox jumps over the lazy dog and keeps going ".repeat(3).slice(0, 190);

/** The thread log over an object's storage, as the object opens it (seed before the object's first read: its tail cache starts empty). */
export const logOf = (storage: DurableObjectStorage) => ThreadStore.of(storage, { meta: openThreadMeta(storage), embedder: EMBEDDED_TURNS });

export function mustUpdate(log: ThreadStore, update: ThreadUpdate): void {
  log.update(update, "input");
}

/** Appends n messages in bulk through the real update path (1000 per checkpoint): test-only seeding. */
export function seedMessages(log: ThreadStore, n: number): void {
  for (let i = 0; i < n; i += 1000) {
    const count = Math.min(1000, n - i);
    mustUpdate(log, {
      ops: [{ op: "append", messages: Array.from({ length: count }, (_, j) => ({ role: (i + j) % 2 ? "assistant" : "user", content: line(i + j) })) }],
    });
  }
}

export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

export const report = (name: string, figures: Record<string, number | string>) => console.log(`BENCH ${name} ${JSON.stringify(figures)}`);
