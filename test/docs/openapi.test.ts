/// <reference types="vite/client" />
import { OpenAPIHono } from "@hono/zod-openapi";
import { exports } from "cloudflare:workers";
import { anthropicError } from "../../src/anthropic/errors";
import { describe, expect, it } from "vitest";
import { catalog, type ErrorCode } from "../../src/core/errors";
import { app } from "../../src/http/app";
import { declaredBy } from "../../src/edge/access";
import { declaredFor } from "../support/routes";

type Operation = {
  responses: Record<string, { description: string; content?: Record<string, { schema?: unknown }> }>;
  parameters?: { name: string; in: string; required?: boolean }[];
  security?: unknown[];
  operationId?: string;
};
type Doc = {
  openapi: string;
  info: { title: string; version: string };
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, unknown>; securitySchemes: Record<string, { type: string; scheme?: string }> };
  security?: Record<string, unknown[]>[];
};

const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];
// Routes outside the API: plain pages and the document itself. Anything else must be documented.
const PAGES = new Set([
  "/",
  "/landing.css",
  "/health",
  "/openapi.json",
  "/docs",
  "/docs/init.js",
  "/docs/scalar.js",
  "/ui",
  "/ui/",
  "/ui/inspector.js",
  "/ui/inspector.css",
  "/ui/favicon.svg",
]);

async function fetchDoc(): Promise<Doc> {
  const res = await exports.default.fetch("http://x/openapi.json");
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toContain("application/json");
  return (await res.json()) as Doc;
}

/** Hono's `:id` (and `:id{regex}`) as OpenAPI's `{id}`. */
const toOpenApiPath = (p: string) => p.replace(/:([A-Za-z0-9_]+)(\{[^}]*\})?/g, "{$1}");

/** method+path of every concrete route in a Hono app (middleware entries are method ALL). */
const routesOf = (h: { routes: { method: string; path: string }[] }) =>
  new Set(h.routes.filter((r) => r.method !== "ALL").map((r) => `${r.method.toLowerCase()} ${toOpenApiPath(r.path)}`));

function* refs(node: unknown, at = "#"): Generator<[string, string]> {
  if (Array.isArray(node)) {
    for (const [i, v] of node.entries()) yield* refs(v, `${at}/${i}`);
  } else if (node && typeof node === "object") {
    for (const [k, v] of Object.entries(node)) {
      if (k === "$ref" && typeof v === "string") yield [at, v];
      else yield* refs(v, `${at}/${k}`);
    }
  }
}

function resolvePointer(doc: unknown, ref: string): unknown {
  if (!ref.startsWith("#/")) return undefined;
  let node: unknown = doc;
  for (const raw of ref.slice(2).split("/")) {
    const key = raw.replaceAll("~1", "/").replaceAll("~0", "~");
    if (!node || typeof node !== "object" || !(key in node)) return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}

/** The declaration on the `all /mcp` route that serves MCP's POST. */
const mcpDeclared = () =>
  app.routes
    .filter((r) => r.method === "ALL" && r.path === "/mcp")
    .map((r) => declaredBy(r.handler))
    .find((d) => d !== undefined);

const operations = (doc: Doc) =>
  Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([m]) => METHODS.includes(m))
      .map(([method, op]) => ({ path, method, op })),
  );

describe("GET /openapi.json", () => {
  it("is an OpenAPI 3.1 document with a bearer security scheme applied by default", async () => {
    const doc = await fetchDoc();
    expect(doc.openapi).toBe("3.1.0");
    expect(doc.info.title).toBe("edgeweave");
    expect(typeof doc.info.version).toBe("string");
    expect(doc.components.securitySchemes.bearer).toMatchObject({ type: "http", scheme: "bearer" });
    expect(doc.security).toEqual([{ bearer: [] }, { apiKey: [] }]);
    expect(doc.components.securitySchemes.apiKey).toMatchObject({ type: "apiKey" });
    for (const [path, item] of Object.entries(doc.paths)) {
      expect(path, "paths start with /").toMatch(/^\//);
      for (const key of Object.keys(item)) expect(METHODS.concat(["parameters", "summary", "description"]), `${path} has ${key}`).toContain(key);
    }
  });

  // Issue 36: no `servers`, so /docs' samples went to a relative URL, and their bodies had "model": "".
  it("names the origin that served it as its server, and samples a request's model as auto", async () => {
    const res = await exports.default.fetch("http://gateway.example:8820/openapi.json");
    const doc = (await res.json()) as Doc & { servers?: { url: string }[] };
    expect(doc.servers?.[0]?.url).toBe("http://gateway.example:8820");
    const modelOf = (schema: string) => (doc.components.schemas[schema] as { properties: Record<string, { example?: unknown }> }).properties.model?.example;
    for (const schema of ["ChatCompletionRequest", "ResponseCreateRequest", "AnthropicMessagesRequest"]) expect(modelOf(schema), schema).toBe("auto");
  });

  it("documents every registered API route, and nothing that is not registered", async () => {
    const doc = await fetchDoc();
    // POST /mcp is served by an `all` route (GET and DELETE answer 405 there), so it is documented as the POST it serves.
    const registered = new Set([...routesOf(app), ...(mcpDeclared() ? ["post /mcp"] : [])]);
    const documented = new Set(operations(doc).map((o) => `${o.method} ${o.path}`));
    const api = [...registered].filter((r) => !PAGES.has(r.slice(r.indexOf(" ") + 1)));
    expect(api.length).toBeGreaterThan(10);
    expect(
      api.filter((r) => !documented.has(r)),
      "registered but undocumented",
    ).toEqual([]);
    expect(
      [...documented].filter((r) => !registered.has(r)),
      "documented but not registered",
    ).toEqual([]);
    expect(
      api.filter((r) => !r.includes(" /v1/") && r !== "post /mcp"),
      "API routes live under /v1 (and MCP's endpoint at /mcp)",
    ).toEqual([]);
  });

  it("mounts every route file's sub-app", () => {
    const modules = import.meta.glob<Record<string, unknown>>("../../src/http/*.ts", { eager: true });
    const mounted = routesOf(app);
    const subApps = Object.entries(modules).flatMap(([file, mod]) =>
      Object.entries(mod)
        .filter(([, v]) => v instanceof OpenAPIHono && v !== app)
        .map(([name, v]) => ({ name: `${file}#${name}`, routes: routesOf(v as OpenAPIHono) })),
    );
    expect(subApps.length).toBeGreaterThanOrEqual(8);
    for (const sub of subApps) {
      expect(
        [...sub.routes].filter((r) => !mounted.has(r)),
        `${sub.name} routes not mounted`,
      ).toEqual([]);
    }
  });

  it("gives every operation a success response and its error responses, each naming real codes", async () => {
    const doc = await fetchDoc();
    for (const { path, method, op } of operations(doc)) {
      const where = `${method.toUpperCase()} ${path}`;
      const statuses = Object.keys(op.responses);
      expect(
        statuses.some((s) => /^2\d\d$/.test(s)),
        `${where} has a 2xx`,
      ).toBe(true);
      expect(
        statuses.some((s) => /^4\d\d$/.test(s)),
        `${where} has a 4xx`,
      ).toBe(true);
      // A route declared without a bearer key must say so (security: []).
      const need = (declaredFor(method, path) ?? (`${method} ${path}` === "post /mcp" ? mcpDeclared() : undefined))?.access;
      expect(need, `${where} declares its access`).toBeDefined();
      const exempt = need === "public" || need === "signed";
      if (exempt) expect(op.security, `${where} is exempt from bearer auth: declare security: []`).toEqual([]);
      else expect(op.security === undefined && statuses.includes("401"), `${where} takes the bearer key and documents 401`).toBe(true);
      // The Anthropic Messages routes answer in Anthropic's error shape, with the status it gives each code.
      const anthropic = path.startsWith("/v1/messages");
      const statusOf = (code: ErrorCode) => (anthropic ? anthropicError({ code, status: catalog[code].status, message: "" }).status : catalog[code].status);
      for (const [status, res] of Object.entries(op.responses)) {
        if (Number(status) < 400) continue;
        const codes = res.description.match(/BEM-\d{3}/g) ?? [];
        expect(codes.length, `${where} ${status} names its codes`).toBeGreaterThan(0);
        for (const code of codes) {
          expect(code in catalog, `${where} ${status}: ${code} is in the catalog`).toBe(true);
          expect(statusOf(code as ErrorCode), `${where}: ${code} belongs under ${status}`).toBe(Number(status));
        }
        expect(res.content?.["application/json"]?.schema, `${where} ${status} has a JSON body`).toEqual({
          $ref: `#/components/schemas/${anthropic ? "AnthropicError" : "Error"}`,
        });
      }
    }
  });

  it("documents the Anthropic Messages routes: their request and response schemas (issue 22)", async () => {
    const doc = (await fetchDoc()) as unknown as {
      paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: unknown }> } }>>;
      components: { schemas: Record<string, unknown> };
    };
    expect(doc.paths["/v1/messages"]?.post?.requestBody?.content["application/json"]?.schema).toEqual({
      $ref: "#/components/schemas/AnthropicMessagesRequest",
    });
    expect(doc.paths["/v1/messages/count_tokens"]?.post?.requestBody?.content["application/json"]?.schema).toEqual({
      $ref: "#/components/schemas/AnthropicCountTokensRequest",
    });
    expect(Object.keys(doc.components.schemas)).toEqual(expect.arrayContaining(["AnthropicMessage", "AnthropicError", "AnthropicTokenCount"]));
  });

  it("documents Idempotency-Key where a route honours it, and only there: the header, Idempotent-Replayed and its codes", async () => {
    const doc = await fetchDoc();
    const honoured: string[] = [];
    for (const { path, method, op } of operations(doc)) {
      const where = `${method.toUpperCase()} ${path}`;
      const header = (op.parameters ?? []).find((p) => p.in === "header" && p.name.toLowerCase() === "idempotency-key");
      if (!declaredFor(method, path)?.idempotent) {
        expect(header, `${where} does not take Idempotency-Key`).toBeUndefined();
        continue;
      }
      honoured.push(where);
      expect(header, `${where} declares the Idempotency-Key header`).toMatchObject({ required: false });
      const ok = Object.entries(op.responses).filter(([s]) => /^2\d\d$/.test(s));
      for (const [s, res] of ok) expect(Object.keys((res as { headers?: object }).headers ?? {}), `${where} ${s}`).toContain("Idempotent-Replayed");
      for (const code of ["BEM-106", "BEM-107", "BEM-108", "BEM-131"] as const)
        expect(op.responses[String(catalog[code].status)]?.description ?? "", `${where} documents ${code}`).toContain(code);
    }
    expect(honoured).toEqual(expect.arrayContaining(["POST /v1/chat/completions", "POST /v1/responses", "POST /v1/messages", "POST /v1/memory/tasks"]));
    expect(await fetchDoc(), "the same document on every request").toEqual(doc);
  });

  it("documents POST /mcp, the route table's MCP endpoint (JSON-RPC, one message or a batch)", async () => {
    const doc = await fetchDoc();
    const op = doc.paths["/mcp"]?.post as (Operation & { requestBody?: { content: Record<string, unknown> } }) | undefined;
    expect(op, "POST /mcp is in the document").toBeDefined();
    expect(Object.keys(op?.requestBody?.content ?? {})).toEqual(["application/json"]);
    expect(op?.responses["405"]?.description).toContain("BEM-003");
    expect(Object.keys(doc.paths["/mcp"] ?? {})).toEqual(["post"]);
  });

  it("declares every path parameter its template names", async () => {
    const doc = await fetchDoc();
    for (const { path, method, op } of operations(doc)) {
      const names = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
      const declared = (op.parameters ?? []).filter((p) => p.in === "path");
      expect(declared.map((p) => p.name).sort(), `${method} ${path}`).toEqual([...names].sort());
      for (const p of declared) expect(p.required, `${method} ${path} ${p.name} required`).toBe(true);
    }
  });

  it("resolves every $ref, and the shared Error schema has the public error shape", async () => {
    const doc = await fetchDoc();
    const all = [...refs(doc)];
    expect(all.length).toBeGreaterThan(20);
    for (const [at, ref] of all) {
      expect(ref, `${at} points into components`).toMatch(/^#\/components\/schemas\/[^/]+$/);
      expect(resolvePointer(doc, ref), `${at} → ${ref}`).toBeDefined();
    }
    expect(doc.components.schemas.Error).toMatchObject({
      type: "object",
      required: ["error"],
      properties: { error: { type: "object", properties: { code: { type: "string" }, message: { type: "string" } } } },
    });
    const ids = operations(doc).flatMap((o) => (o.op.operationId ? [o.op.operationId] : []));
    expect(new Set(ids).size, "operationIds are unique").toBe(ids.length);
  });
});

describe("GET /docs", () => {
  it("renders the reference over /openapi.json with Scalar's viewer from this origin, no key, no CDN", async () => {
    const res = await exports.default.fetch("http://x/docs");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/html");
    const csp = (res.headers.get("content-security-policy") ?? "").split(";").map((d) => d.trim());
    expect(csp).toEqual(expect.arrayContaining(["script-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"]));
    const html = await res.text();
    expect(html).toContain("edgeweave API reference");
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts.map((m) => m[1]?.trim())).toEqual(['src="/docs/scalar.js" defer', 'src="/docs/init.js" defer']);
    expect(scripts.every((m) => m[2] === "")).toBe(true);
    expect(html).not.toMatch(/https?:\/\//);

    const init = await exports.default.fetch("http://x/docs/init.js");
    expect(init.status).toBe(200);
    expect(await init.text()).toContain('url: "/openapi.json"');

    // The pinned @scalar/api-reference bundle, byte for byte.
    const viewer = await exports.default.fetch("http://x/docs/scalar.js");
    expect(viewer.status).toBe(200);
    expect(viewer.headers.get("content-type")).toContain("javascript");
    const pinned = (await import("../../node_modules/@scalar/api-reference/package.json")).version;
    const body = await viewer.text();
    expect(body.length).toBeGreaterThan(1_000_000);
    expect(body).toContain(pinned);
  });

  it("serves only the files it names: other paths under /docs are 404", async () => {
    const res = await exports.default.fetch("http://x/docs/index.html");
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("BEM-002");
  });
});

describe("GET /", () => {
  it("is a small landing page linking to the inspector, the reference, the document and /health", async () => {
    const res = await exports.default.fetch("http://x/");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/html");
    expect(res.headers.get("content-security-policy")).toContain("default-src 'none'");
    const html = await res.text();
    for (const href of ["/ui", "/docs", "/openapi.json", "/health"]) expect(html).toContain(`href="${href}"`);
    expect(html).not.toMatch(/<script/);
    // Issue 36: it was unstyled. Its stylesheet comes from this origin, which the CSP allows, and nothing else.
    expect(html).toContain('<link rel="stylesheet" href="/landing.css">');
    expect(res.headers.get("content-security-policy")).toContain("style-src 'self'");
    const css = await exports.default.fetch("http://x/landing.css");
    expect(css.status).toBe(200);
    expect(css.headers.get("content-type")).toContain("text/css");
    expect(await css.text()).toContain("prefers-color-scheme: dark");
  });
});
