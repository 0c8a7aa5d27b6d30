/**
 * Renders the error catalog as the markdown table of docs/reference/errors.md. Pure (no imports), so the
 * generator script and the staleness test in workerd share it.
 */
export type CatalogLike = Readonly<Record<string, { readonly status: number; readonly meaning: string }>>;

export const START = "<!-- errors:start -->";
export const END = "<!-- errors:end -->";

const cell = (s: string) => s.replaceAll("\\", "\\\\").replaceAll("|", "\\|").replaceAll("\n", " ");

/** The section between (and including) the markers, codes in ascending order. */
export function renderErrorTable(catalog: CatalogLike): string {
  const rows = Object.entries(catalog)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([code, e]) => `| \`${cell(code)}\` | ${e.status} | ${cell(e.meaning)} |`);
  return [
    START,
    "<!-- Generated from src/core/errors.ts by `npm run docs:errors`; do not edit by hand. -->",
    "",
    "| Code | HTTP status | Meaning |",
    "| --- | --- | --- |",
    ...rows,
    END,
  ].join("\n");
}

/** The current section in a document, markers included, or null when the markers are absent. */
export function findSection(doc: string): string | null {
  const start = doc.indexOf(START);
  const end = doc.indexOf(END, start + START.length);
  if (start < 0 || end < 0) return null;
  return doc.slice(start, end + END.length);
}

/** Puts the section between the markers, or appends markers and section at the end. */
export function withSection(doc: string, section: string): string {
  const current = findSection(doc);
  if (current !== null) {
    const at = doc.indexOf(current);
    return doc.slice(0, at) + section + doc.slice(at + current.length);
  }
  return `${doc.replace(/\n*$/, "")}\n\n${section}\n`;
}
