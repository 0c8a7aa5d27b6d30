import { z } from "@hono/zod-openapi";
import { AppError } from "../errors";
import type { Message } from "../thread/message";
import { estimateTokens } from "./tokens";

export const MAX_FACT_BYTES = 8 * 1024;
const KIND = /^[a-z][a-z0-9_-]{0,31}$/;

/** A stored fact. `scope` is the string form; `tokens` is estimated once, at write time. */
export const Fact = z
  .object({
    id: z.string(),
    scope: z.string(),
    kind: z.string(),
    text: z.string(),
    created_at: z.number().int(),
  })
  .openapi("Fact");
export type Fact = z.infer<typeof Fact> & { tokens: number };

export function validateKind(kind: string): string {
  if (!KIND.test(kind)) throw new AppError("BEM-063", "Fact kind must match [a-z][a-z0-9_-]{0,31}");
  return kind;
}

/** Text must say something and fit in 8 KiB of UTF-8. */
export function validateFactText(text: string): string {
  if (text.trim().length === 0) throw new AppError("BEM-064", "Fact text is empty");
  if (new TextEncoder().encode(text).byteLength > MAX_FACT_BYTES) {
    throw new AppError("BEM-062", `Fact text is larger than ${MAX_FACT_BYTES} bytes of UTF-8`);
  }
  return text;
}

/**
 * How a fact reads to the model: `[{kind} {scope}] "{text}"` — one line, the text
 * a JSON string (newlines, quotes and backslashes escaped; U+2028/2029 and NEL
 * too, which JSON leaves alone). A fact's text therefore cannot end its own
 * quotes or start a line that looks like another fact's header.
 */
export const formatFact = (f: { kind: string; scope: string; text: string }): string => `[${f.kind} ${f.scope}] ${quoteLine(f.text)}`;

export const quoteLine = (text: string): string =>
  JSON.stringify(text).replace(/[\u2028\u2029\u0085]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);

/** A fact as the one system message it loads as. */
export const factMessage = (f: Pick<Fact, "id" | "kind" | "scope" | "text" | "created_at">): Message => ({
  id: f.id,
  role: "system",
  content: formatFact(f),
  // Marks the message as a loaded fact (not a turn) for the pipeline and the inspector.
  metadata: { fact: { kind: f.kind, scope: f.scope } },
  created_at: f.created_at,
});

/** Token cost of a fact, i.e. of its system message. */
export const factTokens = (f: { kind: string; scope: string; text: string }): number =>
  estimateTokens({ role: "system", content: formatFact(f) });
