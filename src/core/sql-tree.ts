/**
 * `parts` joined by AND / OR as a balanced tree: SQLite parses `a OR b OR c …` into a chain as deep as it is
 * long, and D1 refuses an expression deeper than 100 ("Expression tree is too large"), so 100 filter
 * conditions or 64 grants inside a statement's own nesting failed. Balanced, n parts nest about log2(n) deep.
 */
export function balanced(parts: readonly string[], op: "AND" | "OR"): string {
  if (parts.length <= 1) return parts[0] ?? "";
  const half = Math.ceil(parts.length / 2);
  return `(${balanced(parts.slice(0, half), op)}) ${op} (${balanced(parts.slice(half), op)})`;
}
