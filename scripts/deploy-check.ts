// What `npm run deploy` checks in wrangler.toml before `wrangler deploy` (scripts/deploy.ts).
// Pure (the file's text in, problems out), so the test runs it on the shipped file.
// `wrangler deploy --dry-run` accepts all of these; only the real deploy would fail on them.

const PLACEHOLDER = /^0{8}-0{4}-0{4}-0{4}-0{12}$/;

/** Each [[d1_databases]] table's lines, up to the next table header. */
function d1Tables(toml: string): string[][] {
  const tables: string[][] = [];
  let current: string[] | undefined;
  for (const line of toml.split("\n")) {
    const header = /^\s*\[\[?([^\]]+)\]\]?/.exec(line);
    if (header) {
      current = header[1]!.trim() === "d1_databases" ? [] : undefined;
      if (current) tables.push(current);
    } else current?.push(line);
  }
  return tables;
}

const value = (lines: string[], key: string): string | undefined =>
  lines.map((l) => new RegExp(`^\\s*${key}\\s*=\\s*"([^"]*)"`).exec(l)?.[1]).find((v) => v !== undefined);

/** The problems that would make a real deploy fail or bind the wrong database (empty: deploy). */
export function deployProblems(toml: string): string[] {
  return d1Tables(toml).flatMap((t) => {
    const binding = value(t, "binding") ?? "(unnamed)";
    const name = value(t, "database_name") ?? "edgeweave";
    const id = value(t, "database_id");
    const fix = `run \`npx wrangler d1 create ${name}\` (or \`npx wrangler d1 info ${name}\` for an existing one) and put its id into wrangler.toml`;
    if (id === undefined) return [`The D1 binding ${binding} has no database_id: ${fix}.`];
    if (id === "") return [`The database_id of ${binding} is empty: ${fix}.`];
    if (PLACEHOLDER.test(id)) return [`The database_id of ${binding} is the placeholder ${id} (wrangler.toml as shipped): ${fix}.`];
    return [];
  });
}
