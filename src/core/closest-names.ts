/** Edit distance (insertions, deletions, substitutions), case-insensitive. */
function distance(a: string, b: string): number {
  const x = a.toLowerCase();
  const y = b.toLowerCase();
  let prev = Array.from({ length: y.length + 1 }, (_, j) => j);
  for (let i = 1; i <= x.length; i++) {
    const row = [i];
    for (let j = 1; j <= y.length; j++) row.push(Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (x[i - 1] === y[j - 1] ? 0 : 1)));
    prev = row;
  }
  return prev[y.length]!;
}

/** The names nearest to `name` (up to `n`, nearest first, ties in the given order): what an "unknown X" error suggests. */
export function closestNames(name: string, names: readonly string[], n = 3): string[] {
  return names
    .map((candidate, i) => ({ candidate, d: distance(name, candidate), i }))
    .sort((p, q) => p.d - q.d || p.i - q.i)
    .slice(0, n)
    .map((m) => m.candidate);
}
