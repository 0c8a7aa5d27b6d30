import { WORD } from "../core/search-terms";

/**
 * facts_fts is one FTS5 index for every tenant, and FTS5 keeps one term dictionary per index. So each
 * tenant's words are indexed under a mark of its own ("<mark>quaternion"): no query form a tenant can send,
 * whole word or prefix, names or expands over a term another tenant wrote, and a search's work depends on
 * its tenant's terms alone (migrations/0032).
 */

/** No vowels and no `y`: a mark only lengthens a word's leading consonants, so Porter stems the word as before. */
const ALPHABET = "0123456789bcdfghjklmnpqrstvwxz";
const MARK_CHARS = 10;

const marks = new Map<string, Promise<string>>();

/** The tenant's mark: 10 characters of the SHA-256 of its id (about 49 bits; fixed length, so no mark begins another). */
export function tenantMark(tenant: string): Promise<string> {
  let mark = marks.get(tenant);
  if (!mark) {
    if (marks.size >= 10_000) marks.clear();
    mark = crypto.subtle.digest("SHA-256", new TextEncoder().encode(tenant)).then((digest) => {
      let n = new DataView(digest).getBigUint64(0);
      let out = "";
      for (let i = 0; i < MARK_CHARS; i++) {
        out += ALPHABET[Number(n % 30n)];
        n /= 30n;
      }
      return out;
    });
    marks.set(tenant, mark);
  }
  return mark;
}

/**
 * A fact's text as facts_fts indexes it: its words (WORD, the tokenizer's word characters), each behind the
 * mark. Nothing else is left, so the tokenizer finds exactly these words.
 */
export function markedText(mark: string, text: string): string {
  return Array.from(text.normalize("NFKC").matchAll(WORD), (m) => mark + m[0]).join(" ");
}
