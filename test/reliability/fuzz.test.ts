import { env } from "cloudflare:workers";
/**
 * Fuzz every route with bodies that are invalid BY CONSTRUCTION (each body
 * misses a required field or carries a wrongly typed one, read from the
 * route's own OpenAPI schema, or is not a JSON object at all), hostile path
 * ids and query values. Every answer must be a coded 4xx with the exact
 * error shape, never a 5xx, and storage must be exactly as before.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sign } from "../../src/webhooks/signature";
import { settleBookkeeping } from "../support/bookkeeping";
import { snapshot } from "../support/runs";
import { api, createTenant, OPERATOR_KEY, type TestTenant } from "../support/tenants";
import { appRoutes, codedClientErrorProblem, codedErrorProblem, dumpD1, keyPool, report, SEED, send, type RouteRef } from "./support";

// ---- the routes and their body schemas ------------------------------------

type Schema = { type?: string | string[]; properties?: Record<string, Schema>; required?: string[]; oneOf?: Schema[]; anyOf?: Schema[]; $ref?: string };
type Shape = {
  /** Top-level properties with a plain JSON type, and the types they accept. */
  typed: Map<string, Set<string>>;
  /** Every variant requires some field, so an object with none of them is invalid. */
  requiredAll: boolean;
  /** String-typed properties (homes for huge strings). */
  strings: string[];
};

const routes = appRoutes();
const WITH_BODY = new Set(["POST", "PUT", "PATCH", "DELETE"]);
const bodyRoutes = routes.filter((r) => WITH_BODY.has(r.method));
const getRoutes = routes.filter((r) => r.method === "GET");
const isDelivery = (r: RouteRef) => r.method === "POST" && r.path === "/v1/webhooks/:id";

const openapiPath = (p: string) => p.replace(/:([A-Za-z_]+)/g, "{$1}");

function shapeOf(doc: { components: { schemas: Record<string, Schema> } }, schema: Schema | undefined): Shape | null {
  if (!schema) return null;
  const deref = (s: Schema): Schema => (s.$ref ? deref(doc.components.schemas[s.$ref.split("/").pop()!]!) : s);
  const top = deref(schema);
  const variants = (top.oneOf ?? top.anyOf ?? [top]).map(deref);
  const typed = new Map<string, Set<string>>();
  const untyped = new Set<string>();
  for (const v of variants) {
    for (const [k, p] of Object.entries(v.properties ?? {})) {
      const t = deref(p).type;
      if (t === undefined) untyped.add(k);
      else for (const x of Array.isArray(t) ? t : [t]) typed.set(k, (typed.get(k) ?? new Set()).add(x));
    }
  }
  for (const k of untyped) typed.delete(k);
  const requiredAll = variants.every((v) => (v.required ?? []).length > 0);
  if (!requiredAll && variants.length > 1) throw new Error("fuzz: a union body without required fields; teach shapeOf how to make it invalid");
  const strings = [...typed].filter(([, t]) => t.has("string")).map(([k]) => k);
  return { typed, requiredAll, strings };
}

// ---- invalid bodies ---------------------------------------------------------

/** Values of every JSON type; a property gets one whose type it does not accept. */
const VALUES: { v: unknown; t: string }[] = [
  { v: "wrong", t: "string" },
  { v: "", t: "string" },
  { v: 12.5, t: "number" },
  { v: 7, t: "integer" },
  { v: -1, t: "integer" },
  { v: true, t: "boolean" },
  { v: null, t: "null" },
  { v: { k: 1 }, t: "object" },
  { v: [1, "a"], t: "array" },
];
const accepts = (types: Set<string>, t: string) => types.has(t) || (t === "integer" && types.has("number"));
const wrongFor = (types: Set<string>) => VALUES.filter((c) => !accepts(types, c.t)).map((c) => c.v);

/** Extra keys never collide with a real field (they all start with x_). */
const extras = fc.dictionary(
  fc.string({ maxLength: 8 }).map((s) => `x_${s}`),
  fc.jsonValue({ maxDepth: 2 }),
  { maxKeys: 3 },
);

/** An object the route must refuse: required fields absent, and ≥1 field of a wrong type unless absence alone suffices. */
function invalidObject(shape: Shape | null): fc.Arbitrary<Record<string, unknown>> {
  const keys = shape ? [...shape.typed.keys()] : [];
  const minWrong = shape && !shape.requiredAll ? 1 : 0;
  if (keys.length < minWrong) throw new Error("fuzz: no typed field to get wrong");
  return fc.tuple(fc.subarray(keys, { minLength: minWrong }), extras).chain(([wrongKeys, extra]) =>
    fc.tuple(...wrongKeys.map((k) => fc.constantFrom(...wrongFor(shape!.typed.get(k)!)))).map((vals) => {
      const o: Record<string, unknown> = { ...extra };
      for (const [i, k] of wrongKeys.entries()) o[k] = vals[i];
      return o;
    }),
  );
}

type Body = { bytes: Uint8Array | string; contentType: string | null; note: string };
const JSON_CT = "application/json";
const enc = new TextEncoder();
const json = (text: string, note: string, contentType: string | null = JSON_CT): Body => ({ bytes: enc.encode(text), contentType, note });

/** Puts `inner` (JSON text) at key `key` of the object text `outer`. */
const withField = (outer: Record<string, unknown>, key: string, inner: string) => {
  const rest = JSON.stringify(outer).slice(1);
  return `{${JSON.stringify(key)}:${inner}${rest === "}" ? "}" : `,${rest}`}`;
};

const CATEGORIES = [
  "wrong_types",
  "missing_fields",
  "prototype_keys",
  "huge_strings",
  "deep_nesting",
  "huge_arrays",
  "invalid_utf8",
  "wrong_content_type",
  "empty_body",
  "non_json",
  "top_level_not_object",
] as const;
type Category = (typeof CATEGORIES)[number];

/** Cases per category (≈2,300 body cases + the GET cases): a few thousand a run, well under a minute. */
const RUNS: Record<Category, number> = {
  wrong_types: 400,
  missing_fields: 220,
  prototype_keys: 260,
  huge_strings: 60,
  deep_nesting: 160,
  huge_arrays: 80,
  invalid_utf8: 240,
  wrong_content_type: 260,
  empty_body: 90,
  non_json: 260,
  top_level_not_object: 200,
};
const GET_RUNS = 350;

function bodyFor(category: Category, shape: Shape | null): fc.Arbitrary<Body> {
  const base = invalidObject(shape);
  switch (category) {
    case "wrong_types":
      return base.map((o) => json(JSON.stringify(o), "wrong types"));
    case "missing_fields":
      // Only extras: every required field missing (routes whose fields are all optional get a wrong type too).
      return (shape?.requiredAll === false ? base : extras).map((o) => json(JSON.stringify(o), "missing fields"));
    case "prototype_keys": {
      const poison = `{"polluted":"yes","role":"admin","model":"offline-echo","messages":[{"role":"user","content":"x"}],"isAdmin":true}`;
      const keys = [...(shape?.typed.keys() ?? [])];
      return fc
        .tuple(base, fc.constantFrom("__proto__", "constructor", "prototype"), fc.option(fc.constantFrom(...(keys.length ? keys : ["x_nested"]))))
        .map(([o, pk, nestedIn]) => {
          let text = withField(o, pk, pk === "constructor" ? `{"prototype":${poison}}` : poison);
          if (nestedIn !== null) text = withField({}, nestedIn, `[{"__proto__":${poison}}]`).slice(0, -1) + "," + text.slice(1);
          return json(text, `prototype key ${pk}${nestedIn ? ` and nested in ${nestedIn}` : ""}`);
        });
    }
    case "huge_strings":
      return fc
        .tuple(
          base,
          fc.constantFrom(64 * 1024 + 1, 300_000, 1024 * 1024 + 1),
          fc.constantFrom("a", "é", "\\u0000"),
          fc.constantFrom(...(shape?.strings.length ? shape.strings : ["x_huge"])),
        )
        .map(([o, size, unit, key]) => {
          const n = Math.ceil(size / (unit === "é" ? 2 : unit.length === 1 ? 1 : 6));
          return json(withField(o, key, `"${unit.repeat(n)}"`), `huge string ${size}B of ${unit} in ${key}`);
        });
    case "deep_nesting":
      return fc
        .tuple(base, fc.constantFrom(33, 200, 1000, 5000), fc.constantFrom("[", '{"a":'), fc.boolean(), fc.boolean())
        .map(([o, depth, open, top, closed]) => {
          const close = open === "[" ? "]" : "}";
          const nest = open.repeat(depth) + "1" + (closed ? close.repeat(depth) : "");
          return json(top ? nest : withField(o, "x_deep", nest), `depth ${depth} ${open}${top ? " top-level" : ""}${closed ? "" : " unclosed"}`);
        });
    case "huge_arrays":
      return fc.tuple(base, fc.constantFrom(2_000, 10_001, 50_000), fc.constantFrom("0", '"x"', "{}", "null"), fc.boolean()).map(([o, n, item, top]) => {
        const arr = `[${new Array(n).fill(item).join(",")}]`;
        return json(top ? arr : withField(o, "x_big", arr), `array of ${n} ${item}${top ? " top-level" : ""}`);
      });
    case "invalid_utf8": {
      const bad = fc.constantFrom(
        [0xff],
        [0xfe, 0xff],
        [0xc0, 0xaf],
        [0xed, 0xa0, 0x80],
        [0xe2, 0x82],
        [0xf8, 0x88, 0x80, 0x80, 0x80],
        [0x80],
        [0xf4, 0x90, 0x80, 0x80],
      );
      return fc.tuple(base, bad, fc.nat()).map(([o, seq, at]) => {
        const good = enc.encode(withField(o, "x_text", '"hello world"'));
        const i = at % (good.length + 1);
        const bytes = new Uint8Array([...good.slice(0, i), ...seq, ...good.slice(i)]);
        return { bytes, contentType: JSON_CT, note: `invalid UTF-8 ${seq.map((b) => b.toString(16)).join(" ")} at byte ${i}` };
      });
    }
    case "wrong_content_type":
      return fc
        .tuple(
          base,
          fc.constantFrom(
            "text/plain",
            "text/plain;charset=utf-8",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=zz",
            null,
            "application/xml",
            "application/jsonx",
            "json",
            "application/octet-stream",
            "*/*",
          ),
          fc.boolean(),
        )
        .map(([o, ct, form]) => {
          const text = form ? new URLSearchParams(Object.entries(o).map(([k, v]) => [k, JSON.stringify(v)])).toString() || "a=1" : JSON.stringify(o);
          return json(text, `content-type ${ct ?? "(none)"}${form ? " form-encoded" : ""}`, ct);
        });
    case "empty_body":
      return fc
        .constantFrom(JSON_CT, null, "text/plain")
        .map((ct) => ({ bytes: new Uint8Array(0), contentType: ct, note: `empty body, content-type ${ct ?? "(none)"}` }));
    case "non_json": {
      const fixed = fc.constantFrom(
        "{",
        "}",
        "{'a':1}",
        '{"a":1,}',
        "[1,]",
        "NaN",
        "undefined",
        "{a:1}",
        '{"a":01}',
        "// c\n{}",
        '{"a":"\\x41"}',
        '"unterminated',
        "\u0000",
        "\ufeff",
        "tru",
        '{"a" 1}',
        "1 2",
        "{}{}",
        "\uFEFF\uFEFF{}",
      );
      const random = fc.string({ maxLength: 64, unit: "binary" }).filter((s) => {
        try {
          JSON.parse(s);
          return false;
        } catch {
          return true;
        }
      });
      const truncated = base.chain((o) => {
        const t = JSON.stringify(o);
        return fc.integer({ min: 1, max: Math.max(1, t.length - 1) }).map((n) => t.slice(0, n));
      });
      return fc.oneof(fixed, random, truncated).map((t) => json(t, `non-JSON ${JSON.stringify(t.slice(0, 40))}`));
    }
    case "top_level_not_object":
      return fc
        .oneof(
          fc.constantFrom("null", "0", "-1", "1e308", "1e999", "true", "false", '"{}"', "[]", "[{}]", "[null]"),
          fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 4 }).map((a) => JSON.stringify(a)),
          fc.string().map((s) => JSON.stringify(s)),
          fc.double().map((d) => JSON.stringify(d)),
        )
        .map((t) => json(t, `top-level ${t.slice(0, 40)}`));
  }
}

// ---- ids for path parameters ------------------------------------------------

const HOSTILE = [
  "..",
  "%2e%2e",
  "..%2F..%2Fadmin",
  "a%2Fb",
  "a%00b",
  "%FF%FE",
  "%zz",
  "%",
  "__proto__",
  "constructor",
  "prototype",
  "' OR '1'='1",
  "1;DROP TABLE facts",
  "x".repeat(5000),
  "%F0%9F%98%80",
  "%3Cscript%3E",
  "a%20b",
  "null",
  "undefined",
  "-1",
  "1e309",
  "~",
  "a~b",
  "%0d%0aX-Injected:%201",
];
const nonexistent = fc.stringMatching(/^[a-z][a-z0-9]{3,12}$/).map((s) => `nx-${s}`);

type Fixture = {
  t: TestTenant;
  nextKey: () => string;
  thread: string;
  hook: { id: string; secret: string };
  shapes: Map<string, Shape | null>;
  queryParams: Map<string, string[]>;
};
let fx: Fixture;

/** Fills `:params`. DELETE never gets an id that exists (an empty JSON body is a valid DELETE). */
function pathArb(r: RouteRef): fc.Arbitrary<{ path: string; realId: boolean }> {
  const names = [...r.path.matchAll(/:([A-Za-z_]+)/g)].map((m) => m[1]!);
  if (names.length === 0) return fc.constant({ path: r.path, realId: false });
  const real = r.method === "DELETE" ? [] : isDelivery(r) ? [fx.hook.id] : [fx.thread];
  const idArb = fc.oneof(
    { weight: 2, arbitrary: nonexistent },
    { weight: 2, arbitrary: fc.constantFrom(...HOSTILE) },
    ...(real.length ? [{ weight: 2, arbitrary: fc.constantFrom(...real) }] : []),
  );
  const tenantArb = fc.oneof({ weight: 3, arbitrary: fc.constant(fx.t.tenant) }, { weight: 1, arbitrary: fc.constantFrom(...HOSTILE) });
  return fc.tuple(...names.map((n) => (n === "tenant" ? tenantArb : idArb))).map((vals) => {
    let path = r.path;
    for (const [i, n] of names.entries()) path = path.replace(`:${n}`, vals[i]!);
    return { path, realId: vals.some((v) => real.includes(v)) };
  });
}

// ---- running and counting ----------------------------------------------------

type Tally = { cases: number; statuses: Record<string, number>; fiveHundreds: number; violations: string[] };
const tallies = new Map<string, Tally>();
const tally = (c: string): Tally => tallies.get(c) ?? (tallies.set(c, { cases: 0, statuses: {}, fiveHundreds: 0, violations: [] }), tallies.get(c)!);
let operatorCalls = 0;

function keyFor(path: string): string {
  // The operator key has one rate-limit bucket; give it a share of the admin routes only.
  if (path.startsWith("/v1/admin/") && operatorCalls < 300 && operatorCalls++ % 3 === 0) return OPERATOR_KEY;
  return fx.nextKey();
}

async function runBodyCategory(category: Category): Promise<Tally> {
  const arb = fc
    .constantFrom(...bodyRoutes)
    .chain((r) =>
      fc.record({ route: fc.constant(r), at: pathArb(r), body: bodyFor(category, fx.shapes.get(`${r.method} ${r.path}`) ?? null), signed: fc.boolean() }),
    );
  const cases = fc.sample(arb, { seed: SEED + CATEGORIES.indexOf(category), numRuns: RUNS[category] });
  const t = tally(category);
  for (const c of cases) {
    const headers: Record<string, string> = {};
    let key: string | undefined;
    if (isDelivery(c.route)) {
      // Half the deliveries carry a valid signature, so the body itself is what gets refused.
      if (c.signed && c.at.realId) {
        const ts = String(Math.floor(Date.now() / 1000));
        headers["x-edgeweave-timestamp"] = ts;
        headers["x-edgeweave-signature"] = await sign(fx.hook.secret, ts, typeof c.body.bytes === "string" ? c.body.bytes : c.body.bytes);
      }
    } else key = keyFor(c.at.path);
    const res = await send(c.route.method, c.at.path, { key, body: c.body.bytes, contentType: c.body.contentType, headers });
    t.cases++;
    t.statuses[res.status] = (t.statuses[res.status] ?? 0) + 1;
    if (res.status >= 500) t.fiveHundreds++;
    // An empty body is `{}` to a route whose fields are all optional: a valid call, so 2xx is allowed there.
    const shape = fx.shapes.get(`${c.route.method} ${c.route.path}`);
    const emptyMayPass = category === "empty_body" && shape?.requiredAll === false && res.status < 300;
    const problem = emptyMayPass ? null : codedClientErrorProblem(res);
    if (problem) t.violations.push(`${category}: ${c.route.method} ${c.at.path.slice(0, 80)} [${c.body.note}] → ${problem}: ${res.text.slice(0, 160)}`);
  }
  return t;
}

/** Hostile or out-of-range values for every documented query parameter (and some undocumented ones). */
function getArb(): fc.Arbitrary<{ route: RouteRef; path: string }> {
  const value = fc.oneof(
    fc.constantFrom(
      "-1",
      "0",
      "1e999",
      "NaN",
      "99999999999999999999",
      "1.5",
      "",
      "%FF",
      "%zz",
      "a~b",
      "~",
      "9~x",
      "system",
      "session:",
      ":",
      "__proto__",
      "x".repeat(3000),
      "organization:acme",
      "ORG:A",
      "'--",
    ),
    fc.string({ maxLength: 20 }).map(encodeURIComponent),
  );
  return fc.constantFrom(...getRoutes).chain((r) => {
    const names = fx.queryParams.get(`${r.method} ${r.path}`) ?? [];
    return fc
      .tuple(pathArb(r), fc.array(fc.tuple(fc.constantFrom(...names, "limit", "cursor", "before", "x"), value), { maxLength: 4 }))
      .map(([at, pairs]) => ({ route: r, path: `${at.path}${pairs.length ? "?" : ""}${pairs.map(([k, v]) => `${k}=${v}`).join("&")}` }));
  });
}

// ---- storage snapshot ----------------------------------------------------------

async function storage() {
  const key = fx.nextKey();
  const threads = await (await api("/v1/threads?limit=100", { key })).json();
  const facts: Record<string, unknown> = {};
  for (const scope of ["system", "organization:acme", `session:${fx.thread}`])
    facts[scope] = await (await api(`/v1/memory/facts?scope=${scope}`, { key })).json();
  const webhooks = await (await api("/v1/webhooks", { key })).json();
  const tenants = await (await api("/v1/admin/tenants", { key: OPERATOR_KEY })).json();
  return { threads, thread: await snapshot(key, fx.thread), facts, webhooks, tenants, d1: await dumpD1(otherTenants) };
}
let before: Awaited<ReturnType<typeof storage>>;
// Tenants of other test files, there before the fuzz starts: their rows are not the fuzz's to judge
// (tenants the fuzz creates itself are compared like everything else).
let otherTenants: ReadonlySet<string> = new Set();

beforeAll(async () => {
  const t = await createTenant();
  const nextKey = await keyPool(t.tenant, 12);
  const thread = `fuzz-${crypto.randomUUID().slice(0, 8)}`;
  const turn = await api("/v1/chat/completions", {
    key: t.adminKey,
    body: { model: "auto", thread_id: thread, messages: [{ role: "user", content: "seed the thread" }] },
  });
  expect(turn.status).toBe(200);
  for (const [scope, text] of [
    ["organization:acme", "org fact"],
    [`session:${thread}`, "session fact"],
  ]) {
    expect((await api("/v1/memory/facts", { key: t.adminKey, body: { scope, kind: "note", text } })).status).toBe(201);
  }
  const hookRes = await api("/v1/webhooks", {
    key: t.adminKey,
    body: {
      name: "fuzz",
      agent_name: "assistant",
      thread_from: "/zz_thread",
      text_from: "/zz_text",
      scopes: ["session:*", "organization:acme"],
      rewrite_history: true,
    },
  });
  expect(hookRes.status).toBe(201);
  const hook = (await hookRes.json()) as { id: string; secret: string };

  const doc = (await (await api("/openapi.json")).json()) as {
    paths: Record<string, Record<string, { requestBody?: { content?: Record<string, { schema?: Schema }> }; parameters?: { in: string; name: string }[] }>>;
    components: { schemas: Record<string, Schema> };
  };
  const shapes = new Map<string, Shape | null>();
  const queryParams = new Map<string, string[]>();
  for (const r of routes) {
    const op = doc.paths[openapiPath(r.path)]?.[r.method.toLowerCase()];
    shapes.set(`${r.method} ${r.path}`, shapeOf(doc, op?.requestBody?.content?.[JSON_CT]?.schema));
    queryParams.set(
      `${r.method} ${r.path}`,
      (op?.parameters ?? []).filter((p) => p.in === "query").map((p) => p.name),
    );
  }
  fx = { t, nextKey, thread, hook, shapes, queryParams };
  // The seed turn's usage and list time leave after its answer: landed before the snapshot, not during the fuzz.
  await settleBookkeeping(t.tenant, [thread]);
  const existing = await env.DB.prepare("SELECT id FROM tenants WHERE id <> ?").bind(t.tenant).all<{ id: string }>();
  otherTenants = new Set(existing.results.map((r) => r.id));
  before = await storage();
});

describe("fuzz: every route, invalid bodies → a coded 4xx, never a 5xx", () => {
  it("reads the routes from the app, with their body schemas", () => {
    expect(bodyRoutes.map((r) => `${r.method} ${r.path}`)).toEqual(
      expect.arrayContaining(["POST /v1/chat/completions", "POST /v1/invoke", "POST /v1/memory/facts", "POST /v1/webhooks/:id", "DELETE /v1/threads/:id"]),
    );
    // Every JSON route but the delivery (raw, signed) has a schema to build invalid bodies from.
    const missing = bodyRoutes.filter((r) => r.method === "POST" && !isDelivery(r) && fx.shapes.get(`${r.method} ${r.path}`) === null);
    expect(missing).toEqual([]);
  });

  it.each(CATEGORIES.map((c) => [c]))("%s", async (category) => {
    const t = await runBodyCategory(category);
    expect(t.cases).toBe(RUNS[category]);
    expect(t.violations.slice(0, 10)).toEqual([]);
  });

  it("GET routes with hostile ids and query values: < 500, coded when an error", async () => {
    const t = tally("get_queries");
    for (const c of fc.sample(getArb(), { seed: SEED + 100, numRuns: GET_RUNS })) {
      const res = await send("GET", c.path, { key: c.path.startsWith("/v1/") ? keyFor(c.path) : undefined });
      t.cases++;
      t.statuses[res.status] = (t.statuses[res.status] ?? 0) + 1;
      if (res.status >= 500) t.fiveHundreds++;
      const problem = res.status >= 500 ? `status ${res.status}` : res.status >= 400 ? codedErrorProblem(res) : null;
      if (problem) t.violations.push(`GET ${c.path.slice(0, 100)} → ${problem}: ${res.text.slice(0, 160)}`);
    }
    expect(t.violations.slice(0, 10)).toEqual([]);
  });

  it("nothing polluted Object.prototype", () => {
    const probe: Record<string, unknown> = {};
    for (const k of ["polluted", "role", "isAdmin", "model", "messages"]) expect(probe[k], k).toBeUndefined();
  });

  it("storage is exactly as before: threads, the seeded thread's state and history, facts, hooks, tenants, every D1 row", async () => {
    const after = await storage();
    expect(after.thread).toEqual(before.thread);
    expect(after.threads).toEqual(before.threads);
    expect(after.facts).toEqual(before.facts);
    expect(after.webhooks).toEqual(before.webhooks);
    expect(after.tenants).toEqual(before.tenants);
    expect(after.d1).toEqual(before.d1);
  });
});

afterAll(() => {
  const figures: Record<string, unknown> = {};
  let cases = 0;
  let fiveHundreds = 0;
  let violations = 0;
  for (const [c, t] of tallies) {
    figures[c] = { cases: t.cases, "5xx": t.fiveHundreds, violations: t.violations.length, statuses: t.statuses };
    cases += t.cases;
    fiveHundreds += t.fiveHundreds;
    violations += t.violations.length;
  }
  report("fuzz", { seed: SEED, cases, "5xx": fiveHundreds, violations, operator_calls: operatorCalls, per_category: figures });
});
