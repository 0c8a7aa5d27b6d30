/**
 * What a zod failure reports; the structural type keeps this module free of any zod import.
 * `code`, `expected`, `values` and `errors` (a union's failure per branch) are read when present.
 */
export type Issue = {
  readonly path: readonly PropertyKey[];
  readonly message: string;
  readonly code?: string;
  readonly expected?: unknown;
  readonly values?: readonly unknown[];
  readonly errors?: readonly (readonly Issue[])[];
};

export type IssueFormat = {
  /** Shown for an issue at the top level (empty path), e.g. "(body)". */
  root?: string;
  /** Put before every path, e.g. "context.". */
  prefix?: string;
  /** Put after every issue, e.g. " (needed by todo_list)". */
  suffix?: string;
  /** How many issues to list (default 5). */
  limit?: number;
  /** The value that failed, when at hand: tells a missing field from a wrong one where a union's branches disagree. */
  input?: unknown;
};

/** "a", "a or b", "a, b or c". */
const either = (xs: readonly string[]): string => (xs.length <= 1 ? (xs[0] ?? "") : `${xs.slice(0, -1).join(", ")} or ${xs.at(-1)}`);

/** What one union branch wanted at the union's own path, when it failed there on the type or value alone. */
function wantedAtRoot(branch: readonly Issue[]): string[] | undefined {
  if (branch.length !== 1 || branch[0]!.path.length > 0) return undefined;
  const i = branch[0]!;
  if (i.code === "invalid_type" && typeof i.expected === "string") return [i.expected];
  if (i.code === "invalid_value" && i.values?.length) return i.values.map((v) => JSON.stringify(v));
  return undefined;
}

/** A literal's or an enum's mismatch on a field of the union's object (a `type: "message"` tag, a `role`). */
const isTagMiss = (i: Issue) => i.code === "invalid_value" && i.path.length === 1 && (i.values?.length ?? 0) > 0;
/** A literal's mismatch (one value allowed): the branch was meant for another kind of value. An enum's (a `role`) is a field of the right kind gone wrong. */
const isLiteralMiss = (i: Issue) => isTagMiss(i) && i.values!.length === 1;

/** The value at `path` inside `input`, or undefined. */
function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let v = input;
  for (const k of path) v = v !== null && typeof v === "object" ? (v as Record<PropertyKey, unknown>)[k] : undefined;
  return v;
}

/**
 * zod says only "Invalid input" when no branch of a union matched. Say what was expected instead:
 * - the value matched no branch's type: the branches' types ("Required: expected string or array" for
 *   a missing field);
 * - every branch is an object told apart by the same tag field and the tag matched none: the tag's values;
 * - an object with none of the fields that tell the branches apart (`{}` for an item that is a typed
 *   call or a message with a role): each of those fields with its values;
 * - else the issues of the branch the value was meant for: the fewest literal tags missed (a literal
 *   names a kind, so missing one says "not this kind"; a wrong enum value, a `role`, is a mistake in the
 *   right kind), then the fewest tags missed, then the fewest issues, then the deepest.
 */
function expandUnion(issue: Issue, input: unknown): Issue[] {
  const branches = issue.errors ?? [];
  if (issue.code !== "invalid_union" || branches.length === 0) return [issue];
  const wanted = branches.map(wantedAtRoot);
  if (wanted.every((w) => w !== undefined)) {
    const expected = either([...new Set(wanted.flat())]);
    const received = /received (\w+)/.exec(branches[0]![0]!.message)?.[1];
    const message =
      received === "undefined" ? `Required: expected ${expected}` : `Invalid input: expected ${expected}${received ? `, received ${received}` : ""}`;
    return [{ path: issue.path, message }];
  }
  const tags = branches.map((b) => b.find(isTagMiss));
  const tag = tags[0]?.path[0];
  if (tag !== undefined && tags.every((t) => t?.path[0] === tag)) {
    const values = either([...new Set(tags.flatMap((t) => (t?.values ?? []).map((v) => JSON.stringify(v))))]);
    return [{ path: [...issue.path, tag], message: `Invalid input: expected ${values}` }];
  }
  const value = valueAt(input, issue.path);
  if (value !== null && typeof value === "object" && !Array.isArray(value)) {
    const absent = branches.map((b) => b.find((i) => isTagMiss(i) && !Object.hasOwn(value, i.path[0]!)));
    if (absent.every((a) => a !== undefined)) {
      const byField = new Map<string, string[]>();
      for (const a of absent) byField.set(String(a.path[0]), [...(byField.get(String(a.path[0])) ?? []), ...(a.values ?? []).map((v) => JSON.stringify(v))]);
      const fields = [...byField].map(([field, values]) => `${field} ${either([...new Set(values)])}`);
      return [{ path: issue.path, message: `Required: expected ${fields.join(", or ")}` }];
    }
  }
  const depth = (b: readonly Issue[]) => Math.max(...b.map((i) => i.path.length));
  const rank = (b: readonly Issue[]) => [b.filter(isLiteralMiss).length, b.filter(isTagMiss).length, b.length, -depth(b)];
  const meant = branches
    .filter((b, n) => wanted[n] === undefined && b.length > 0)
    .sort((a, b) => {
      const [x, y] = [rank(a), rank(b)];
      return x[0]! - y[0]! || x[1]! - y[1]! || x[2]! - y[2]! || x[3]! - y[3]!;
    })[0];
  if (!meant) return [issue];
  return meant.flatMap((i) => expandUnion({ ...i, path: [...issue.path, ...i.path] }, input));
}

/**
 * The one formatter for zod issues in error messages: the first few, each as
 * `path: message`, joined with "; ". Every 4xx that reports validation uses it.
 */
export function describeIssues(issues: readonly Issue[], { root = "", prefix = "", suffix = "", limit = 5, input }: IssueFormat = {}): string {
  return issues
    .flatMap((i) => expandUnion(i, input))
    .slice(0, limit)
    .map((i) => `${prefix}${i.path.map(String).join(".") || root}: ${i.message}${suffix}`)
    .join("; ");
}
