import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { decide } from "../../src/auth/policy";
import type { Principal } from "../../src/core/principal";
import { MemoryScope } from "../../src/memory/scope";
import { api, createKey, createTenant, type TestTenant } from "../support/tenants";

/**
 * For random grant sets and random scope/thread requests, a request succeeds only if the
 * policy says so — and the policy agrees with a reference written here from the rule's
 * one sentence (a grant matches a scope exactly, by `name:*`, by `name:prefix*`, or `*`).
 */

const THREADS = ["a", "ab", "b", "acme", "a.b"];
const SCOPES = ["system", "organization:acme", "organization:ab", "docset:a", "docset:b", "team", ...THREADS.map((t) => `session:${t}`)];
const GRANTS = ["*", "organization:acme", "organization:a*", "docset:*", "session:*", "session:a*", "session:ab", "session:b*", "team", "team:*"];

/** The reference: the rule written out again, independently of src/auth. */
function referenceAllows(grants: readonly string[], scope: string): boolean {
  if (scope === "system") return true;
  const [name, id] = scope.includes(":") ? [scope.slice(0, scope.indexOf(":")), scope.slice(scope.indexOf(":") + 1)] : [scope, undefined];
  return grants.some((g) => {
    if (g === "*") return true;
    if (!g.endsWith("*")) return g === scope;
    const [gName, prefix] = [g.slice(0, g.indexOf(":")), g.slice(g.indexOf(":") + 1, -1)];
    return id !== undefined && gName === name && id.startsWith(prefix);
  });
}

type Request = { kind: "facts"; scope: string } | { kind: "state"; thread: string } | { kind: "chat"; thread: string } | { kind: "context"; scopes: string[] };
const request: fc.Arbitrary<Request> = fc.oneof(
  fc.constantFrom(...SCOPES).map((scope) => ({ kind: "facts" as const, scope })),
  fc.constantFrom(...THREADS).map((thread) => ({ kind: "state" as const, thread })),
  fc.constantFrom(...THREADS).map((thread) => ({ kind: "chat" as const, thread })),
  fc.uniqueArray(fc.constantFrom(...SCOPES), { minLength: 1, maxLength: 3 }).map((scopes) => ({ kind: "context" as const, scopes })),
);

const scopesOf = (r: Request): string[] => (r.kind === "facts" ? [r.scope] : r.kind === "context" ? r.scopes : [`session:${r.thread}`]);

function send(key: string, r: Request): Promise<Response> {
  switch (r.kind) {
    case "facts":
      return api(`/v1/memory/facts?scope=${encodeURIComponent(r.scope)}`, { key });
    case "state":
      return api(`/v1/threads/${r.thread}/state`, { key });
    case "chat":
      return api("/v1/chat/completions", { key, body: { model: "offline-echo", thread_id: r.thread, messages: [{ role: "user", content: "hi" }] } });
    case "context":
      return api("/v1/memory/context", { key, body: { scopes: r.scopes, max_tokens: 1000 } });
  }
}

let t: TestTenant;
beforeAll(async () => {
  t = await createTenant();
  for (const thread of THREADS) {
    const res = await api("/v1/chat/completions", {
      key: t.adminKey,
      body: { model: "offline-echo", thread_id: thread, messages: [{ role: "user", content: "seed" }] },
    });
    expect(res.status).toBe(200);
  }
});

describe("policy property: success exactly when the grants allow", () => {
  it("the policy's decisions equal the reference rule (pure, many cases)", () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.constantFrom(...GRANTS), { maxLength: 4 }), request, (grants, r) => {
        const p: Principal = { kind: "tenant", tenant: "t", role: "member", keyId: "k", grants };
        const action = r.kind === "facts" || r.kind === "context" ? "read_scope" : "reach_thread";
        const policy = scopesOf(r).every((s) =>
          action === "reach_thread"
            ? decide(p, action, { thread: s.slice("session:".length) }).allow
            : decide(p, action, { scope: MemoryScope.parse(s) }).allow,
        );
        expect(policy).toBe(scopesOf(r).every((s) => referenceAllows(grants, s)));
      }),
      { seed: 1101, numRuns: 2000 },
    );
  });

  it("over HTTP, with real keys: 2xx iff allowed, else 403 coded", async () => {
    let allowed = 0;
    let refused = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.constantFrom(...GRANTS.filter((g) => g !== "*")), { maxLength: 3 }),
        fc.array(request, { minLength: 1, maxLength: 3 }),
        async (grants, requests) => {
          const { key } = await createKey(t.tenant, { role: "member", scopes: grants });
          for (const r of requests) {
            const res = await send(key, r);
            const body = (await res.json()) as { error?: { code: string } };
            const ok = scopesOf(r).every((s) => referenceAllows(grants, s));
            if (ok) {
              expect(res.status, `${JSON.stringify(grants)} ${JSON.stringify(r)} ${JSON.stringify(body)}`).toBeLessThan(300);
              allowed++;
            } else {
              expect([res.status, body.error?.code], `${JSON.stringify(grants)} ${JSON.stringify(r)}`).toEqual([
                403,
                r.kind === "state" || r.kind === "chat" ? "BEM-025" : "BEM-023",
              ]);
              refused++;
            }
          }
        },
      ),
      { seed: 1102, numRuns: 40 },
    );
    // The generator reaches both sides of the rule.
    expect(allowed).toBeGreaterThan(10);
    expect(refused).toBeGreaterThan(10);
  }, 120_000);
});
