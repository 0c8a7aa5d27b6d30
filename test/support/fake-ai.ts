import type { AiRunner } from "../../src/embed/workers-ai";

/**
 * The far side of Workers AI: the `AI` binding as it answers `run` for a text-embedding model
 * (@cf/baai/bge-small-en-v1.5: `{ shape, data }`), or as it fails. The binding itself lives only in a
 * deploy environment; tests hand this one to the embedders as a deployment's env would.
 */

export const BGE_DIMS = 384;

/** A stand-in sentence model: each word lands in one of the 384 dimensions, so texts sharing words are close. */
export function bagOfWords(text: string, dims = BGE_DIMS): number[] {
  const v = new Array<number>(dims).fill(0);
  for (const w of text.toLowerCase().match(/[a-z]+/g) ?? []) {
    let h = 0;
    for (const c of w) h = (h * 31 + c.charCodeAt(0)) >>> 0;
    v[h % dims]! += 1;
  }
  return v;
}

export type Fake = AiRunner & { calls: { model: string; text: string[] }[] };

/** The AI binding as it answers a text-embedding model, or as it fails. */
export function fakeAi(behave: "ok" | "error" | "hang" | "short" = "ok"): Fake {
  const calls: Fake["calls"] = [];
  return {
    calls,
    async run(model, input) {
      calls.push({ model, text: input.text });
      if (behave === "error") throw new Error("AiError: 3040: capacity exceeded");
      if (behave === "hang") return new Promise(() => undefined);
      const dims = behave === "short" ? 128 : BGE_DIMS;
      return { shape: [input.text.length, dims], data: input.text.map((t) => bagOfWords(t, dims)) };
    },
  };
}

/** A Worker environment of a deployment: its AI binding (and nothing else these embedders read). */
export const deployed = (ai: AiRunner) => ({ AI: ai });
