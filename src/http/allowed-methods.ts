/** Which methods the app serves on a path: turns "no route" into 405 + Allow when the path exists. */
export function allowedMethodsFor(routes: readonly { method: string; path: string }[]): (path: string) => string[] {
  let table: { re: RegExp; method: string }[] | undefined;
  return (path) => {
    table ??= routes
      .filter((r) => r.method !== "ALL")
      .map((r) => ({
        method: r.method,
        re: new RegExp(
          `^${r.path
            .replace(/[.+?^${}()|[\]\\]/g, "\\$&")
            .replace(/:[^/]+/g, "[^/]+")
            .replace(/\*/g, ".*")}$`,
        ),
      }));
    return [...new Set(table.filter((r) => r.re.test(path)).map((r) => r.method))].sort();
  };
}
