import { catalog, type ErrorCode } from "../core/errors";
import { declaredBy } from "../edge/access";

type Response = { description: string; headers?: Record<string, unknown>; content?: Record<string, unknown> };
type Operation = { parameters?: unknown[]; responses: Record<string, Response> };

const CODES: readonly ErrorCode[] = ["BEM-106", "BEM-107", "BEM-108", "BEM-131"];

/**
 * Adds `Idempotency-Key` to the operations whose route declares it (`access(…, { idempotent: true })`),
 * read from the declarations rather than written on each route, so the document cannot miss one: the
 * header, `Idempotent-Replayed` on its success responses, and the codes it answers (in the error shape
 * the operation already uses, so the Messages routes keep Anthropic's).
 */
export function documentIdempotency<D extends { paths?: object }>(doc: D, routes: readonly { method: string; path: string; handler: unknown }[]): D {
  for (const r of routes) {
    if (!declaredBy(r.handler)?.idempotent) continue;
    const path = r.path.replace(/:([A-Za-z0-9_]+)(\{[^}]*\})?/g, "{$1}");
    const op = (doc.paths as Record<string, Record<string, unknown> | undefined> | undefined)?.[path]?.[r.method.toLowerCase()] as Operation | undefined;
    if (!op || op.parameters?.some((p) => (p as { name?: string }).name === "Idempotency-Key")) continue;
    op.parameters = [
      ...(op.parameters ?? []),
      {
        name: "Idempotency-Key",
        in: "header",
        required: false,
        schema: { type: "string", minLength: 1, maxLength: 255 },
        description: "1–255 printable characters; the same key with the same request within 24 h returns the kept result (docs/reference/idempotency.md)",
      },
    ];
    const errorContent = Object.entries(op.responses).find(([s]) => s.startsWith("4"))?.[1].content;
    for (const [status, res] of Object.entries(op.responses))
      if (/^2\d\d$/.test(status))
        res.headers = { ...res.headers, "Idempotent-Replayed": { description: "`true` on a replayed result", schema: { type: "string", enum: ["true"] } } };
    for (const code of CODES) {
      const status = String(catalog[code].status);
      const line = `${code} ${catalog[code].meaning}`;
      const res = op.responses[status];
      op.responses[status] = res
        ? { ...res, description: `${res.description}; ${line}` }
        : { description: line, ...(errorContent ? { content: errorContent } : {}) };
    }
  }
  return doc;
}
