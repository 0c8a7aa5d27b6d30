import { env } from "cloudflare:workers";
import { InMemoryStore } from "@langchain/langgraph-checkpoint";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Principal } from "../../src/core/principal";
import { ScopedStore } from "../../src/langgraph/store";

/**
 * listNamespaces read every distinct namespace of the tenant into the Worker and filtered, cut
 * and paged them there, ordered by where each first appeared among the full namespaces — not by
 * the byte order of the namespaces it returns (README: "byte order of their labels joined with
 * `.`"), which differs once maxDepth cuts a namespace whose label holds a character below `.`
 * (`["a"]` from `a.b` sorts before `a-c`). It pages in SQL now: LangGraph's InMemoryStore is the
 * reference for what prefix / suffix ("*" any label) / maxDepth / limit / offset select, and the
 * order is the bytes of the joined labels (InMemoryStore sorts by locale, the documented difference).
 */
const uid = () => crypto.randomUUID().slice(0, 8);
const principal = (tenant: string, grants: string[]): Principal => ({
  kind: "tenant",
  tenant,
  role: grants.includes("*") ? "admin" : "member",
  keyId: `k-${uid()}`,
  grants,
});

/** D1, recording how many rows each batch brought back to the Worker. */
function counting(db: D1Database): { db: D1Database; rows: number[] } {
  const rows: number[] = [];
  const batch = async (statements: D1PreparedStatement[]) => {
    const results = await db.batch(statements);
    rows.push(results.reduce((n, r) => n + (r.results?.length ?? 0), 0));
    return results;
  };
  return { db: new Proxy(db, { get: (t, p) => (p === "batch" ? batch : Reflect.get(t, p)) }), rows };
}

const bytes = (ns: string[]) => new TextEncoder().encode(ns.join("."));
function byteOrder(a: string[], b: string[]): number {
  const [x, y] = [bytes(a), bytes(b)];
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
  return x.length - y.length;
}

type Query = { prefix?: string[]; suffix?: string[]; maxDepth?: number; limit: number; offset: number };

/** InMemoryStore's selection (filters, maxDepth, dedup) of what the key reaches, in the documented byte order, then paged. */
async function reference(store: InMemoryStore, q: Query): Promise<string[][]> {
  const all = await store.listNamespaces({ prefix: q.prefix, suffix: q.suffix, maxDepth: q.maxDepth, limit: 1_000_000 });
  return all.sort(byteOrder).slice(q.offset, q.offset + q.limit);
}

// Labels past the scope hold what a label may: characters below '.', quotes, backslashes, control characters, astral ones.
const FREE = ["a", "b", "B", "a-c", "a b", '"q"', "back\\slash", "tab\there", "nl\nx", "\u001f", "é", "ｱ", "😀", "x/y", "*"];
const IDS = ["d1", "d-1", "d", "d10", "A"];

describe("listNamespaces pages in SQL, in byte order of the returned namespaces", () => {
  it("maxDepth: the cut namespaces come in their own byte order (['docset','d'] before ['docset','d-1'])", async () => {
    const tenant = `lns-${uid()}`;
    const store = new ScopedStore(env.DB, principal(tenant, ["*"]));
    for (const ns of [
      ["docset", "d-1"],
      ["docset", "d", "x"],
      ["docset", "d1", "a-c"],
      ["docset", "d1", "a", "b"],
    ])
      await store.put(ns, "k", { v: 1 });
    expect(await store.listNamespaces({ maxDepth: 2 })).toEqual([
      ["docset", "d"],
      ["docset", "d-1"],
      ["docset", "d1"],
    ]);
    expect(await store.listNamespaces({ prefix: ["docset", "d1"], maxDepth: 3 })).toEqual([
      ["docset", "d1", "a"],
      ["docset", "d1", "a-c"],
    ]);
  });

  it("a page brings only its own namespaces back from D1, not every namespace of the tenant", async () => {
    const tenant = `lns-${uid()}`;
    const writer = new ScopedStore(env.DB, principal(tenant, ["*"]));
    await writer.batch(
      Array.from({ length: 60 }, (_, i) => ({ op: "put" as const, namespace: ["docset", `n${String(i).padStart(2, "0")}`, "x"], key: "k", value: { i } })),
    );
    const rec = counting(env.DB);
    const reader = new ScopedStore(rec.db, principal(tenant, ["*"]));
    expect(await reader.listNamespaces({ limit: 3, offset: 10 })).toEqual([10, 11, 12].map((i) => ["docset", `n${i}`, "x"]));
    expect(await reader.listNamespaces({ maxDepth: 2, limit: 2, offset: 58 })).toEqual([
      ["docset", "n58"],
      ["docset", "n59"],
    ]);
    expect(rec.rows).toEqual([3, 2]);
  });

  it("selects what InMemoryStore selects for any prefix, suffix, maxDepth, limit and offset, for an admin and a member", async () => {
    const tenant = `lns-${uid()}`;
    const admin = principal(tenant, ["*"]);
    const member = principal(tenant, ["docset:d1*", "organization:A"]);
    const memberReach = (ns: string[]) => (ns[0] === "docset" && ns[1]!.startsWith("d1")) || (ns[0] === "organization" && ns[1] === "A");
    const label = fc.constantFrom(...FREE);
    const namespace = fc
      .tuple(fc.constantFrom("docset", "organization"), fc.constantFrom(...IDS), fc.array(label, { maxLength: 4 }))
      .map(([n, id, rest]) => [n, id, ...rest]);
    const namespaces = fc.sample(fc.uniqueArray(namespace, { minLength: 30, maxLength: 30, selector: (ns) => ns.join(".") }), 1)[0]!;
    const ours = new ScopedStore(env.DB, admin);
    await ours.batch(namespaces.map((ns) => ({ op: "put" as const, namespace: ns, key: "k", value: { v: 1 } })));
    // The reference holds what each key reaches (grants apply to whole namespaces, before maxDepth cuts them).
    const [all, reached] = [new InMemoryStore(), new InMemoryStore()];
    for (const ns of namespaces) {
      await all.put(ns, "k", { v: 1 });
      if (memberReach(ns)) await reached.put(ns, "k", { v: 1 });
    }

    const pattern = (ns: string[], from: "start" | "end") =>
      fc.tuple(fc.integer({ min: 1, max: ns.length }), fc.array(fc.boolean(), { minLength: ns.length, maxLength: ns.length })).map(([n, stars]) => {
        const part = from === "start" ? ns.slice(0, n) : ns.slice(ns.length - n);
        return part.map((l, i) => (stars[i] ? "*" : l));
      });
    const query: fc.Arbitrary<Query> = fc.constantFrom(...namespaces).chain((a) =>
      fc.record(
        {
          prefix: pattern(a, "start"),
          suffix: pattern(a, "end"),
          maxDepth: fc.integer({ min: 1, max: 6 }),
          limit: fc.integer({ min: 1, max: 12 }),
          offset: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 6 })),
        },
        { requiredKeys: ["limit", "offset"] },
      ),
    );
    let answered = 0;
    await fc.assert(
      fc.asyncProperty(query, fc.boolean(), async (q, asMember) => {
        const store = new ScopedStore(env.DB, asMember ? member : admin);
        const got = await store.listNamespaces(q);
        expect(got).toEqual(await reference(asMember ? reached : all, q));
        if (got.length > 0) answered++;
      }),
      { numRuns: 150 },
    );
    expect(answered).toBeGreaterThan(50); // most queries select something: the comparison is not of empty lists
  });
});
