/** What a zod failure reports; the structural type keeps this module free of any zod import. */
export type Issue = { readonly path: readonly PropertyKey[]; readonly message: string };

export type IssueFormat = {
  /** Shown for an issue at the top level (empty path), e.g. "(body)". */
  root?: string;
  /** Put before every path, e.g. "context.". */
  prefix?: string;
  /** Put after every issue, e.g. " (needed by todo_list)". */
  suffix?: string;
  /** How many issues to list (default 5). */
  limit?: number;
};

/**
 * The one formatter for zod issues in error messages: the first few, each as
 * `path: message`, joined with "; ". Every 4xx that reports validation uses it.
 */
export function describeIssues(issues: readonly Issue[], { root = "", prefix = "", suffix = "", limit = 5 }: IssueFormat = {}): string {
  return issues
    .slice(0, limit)
    .map((i) => `${prefix}${i.path.map(String).join(".") || root}: ${i.message}${suffix}`)
    .join("; ");
}
