import { env } from "cloudflare:workers";
import type { ThreadDO } from "../src/object/thread-object";
import type { ThreadUpdate } from "../src/thread/types";

export const stubFor = (name: string) => env.THREADS.get(env.THREADS.idFromName(`bench:${name}-${crypto.randomUUID()}`));

/** A realistic chat line of about 200 characters (~54 tokens). */
export const line = (i: number) => `turn ${i}: ` + "the quick brown fox jumps over the lazy dog and keeps going ".repeat(3).slice(0, 190);

export function mustUpdate(instance: ThreadDO, update: ThreadUpdate): void {
  const r = instance.update(update, "input");
  if (!r.ok) throw new Error(`${r.error.code} ${r.error.message}`);
}

/** Appends n messages in bulk through the real update path (1000 per checkpoint): test-only seeding. */
export function seedMessages(instance: ThreadDO, n: number): void {
  for (let i = 0; i < n; i += 1000) {
    const count = Math.min(1000, n - i);
    mustUpdate(instance, {
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
