import { toHex } from "../core/encoding";

/**
 * The identity of a fact's text, for remembering idempotently: the same words in the same scope are
 * the same fact, whatever their case or spacing (a rerun example, a model that says it again).
 */
export const normalisedFactText = (text: string): string => text.normalize("NFC").toLowerCase().replace(/\s+/gu, " ").trim();

/** SHA-256 of the normalised text, hex (the facts.text_hash column, migration 0028). */
export const factTextHash = async (text: string): Promise<string> =>
  toHex(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(normalisedFactText(text))));
