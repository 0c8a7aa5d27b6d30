import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { grantMatches, parseGrant } from "../../src/auth/grants";
import type { Principal } from "../../src/core/principal";
import { operatorPrincipal } from "../../src/core/principal";
import { isAppError } from "../../src/core/errors";
import { MemoryScope } from "../../src/memory/scope";
import { authorize, decide, resolveScopes } from "../../src/auth/policy";

const canRead = (p: Principal, scope: MemoryScope) => decide(p, "read_scope", { scope }).allow;
const assertCanWriteFact = (p: Principal, scope: MemoryScope) => authorize(p, "write_scope", { scope });

const codeOf = (f: () => unknown): string | undefined => {
  try {
    f();
  } catch (e) {
    return isAppError(e) ? e.code : "not-an-app-error";
  }
  return undefined;
};

const member = (grants: string[]): Principal => ({ kind: "tenant", tenant: "t1", role: "member", keyId: "k", grants });
const admin: Principal = { kind: "tenant", tenant: "t1", role: "admin", keyId: "k", grants: ["*"] };

const name = fc.stringMatching(/^[a-z][a-z0-9_-]{0,31}$/).filter((n) => n !== "system" && n !== "session");
const id = fc.stringMatching(/^[A-Za-z0-9._:-]{1,128}$/).filter((s) => !/^\.+$/.test(s)); // all-dot ids are refused (issue 11, finding 7)

describe("MemoryScope", () => {
  it("has the seed's constructors and string form", () => {
    expect(MemoryScope.system().toString()).toBe("system");
    expect(MemoryScope.session("5f89-aa").toString()).toBe("session:5f89-aa");
    expect(MemoryScope.new("organization", "acme").toString()).toBe("organization:acme");
    expect(MemoryScope.new("team").toString()).toBe("team");
    expect(MemoryScope.parse({ name: "docset", id: "d1" }).toString()).toBe("docset:d1");
  });

  it("splits at the first colon, so thread ids with colons survive", () => {
    const s = MemoryScope.parse("session:a:b:c");
    expect([s.name, s.id]).toEqual(["session", "a:b:c"]);
  });

  it("parse(format(x)) is x for every valid name and id (property)", () => {
    fc.assert(
      fc.property(name, fc.option(id, { nil: undefined }), (n, i) => {
        const s = MemoryScope.new(n, i);
        const back = MemoryScope.parse(s.toString());
        expect([back.name, back.id]).toEqual([n, i]);
      }),
    );
  });

  it("rejects bad names and ids with BEM-060", () => {
    for (const bad of [
      "",
      "Org",
      "1abc",
      "a".repeat(33),
      "org:",
      "org:a b",
      "org:" + "x".repeat(129),
      "system:x",
      "session",
      "ünï",
      "org;DROP TABLE facts",
      42,
      null,
      ["org"],
      { id: "x" },
    ]) {
      expect(
        codeOf(() => MemoryScope.parse(bad)),
        JSON.stringify(bad),
      ).toBe("BEM-060");
    }
  });
});

describe("grants", () => {
  it("exact, name wildcard and '*'", () => {
    const s = MemoryScope.parse;
    expect(grantMatches("organization:acme", s("organization:acme"))).toBe(true);
    expect(grantMatches("organization:acme", s("organization:acme2"))).toBe(false);
    expect(grantMatches("docset:*", s("docset:d1"))).toBe(true);
    expect(grantMatches("docset:*", s("docset"))).toBe(false);
    expect(grantMatches("docset:*", s("docsets:d1"))).toBe(false);
    expect(grantMatches("*", s("anything:at-all"))).toBe(true);
    expect(grantMatches("team", s("team"))).toBe(true);
    expect(grantMatches("team", s("team:x"))).toBe(false);
  });

  it("validates patterns (BEM-060)", () => {
    expect(["*", "docset:*", "organization:acme", "team", "session:support-*"].map(parseGrant)).toEqual([
      "*",
      "docset:*",
      "organization:acme",
      "team",
      "session:support-*",
    ]);
    for (const bad of ["", "**", "Docset:*", "system:*", "system:a*", "a:*:*", "x y", "session:a b*", "team*"])
      expect(
        codeOf(() => parseGrant(bad)),
        bad,
      ).toBe("BEM-060");
  });
});

describe("who may read and write which scope", () => {
  it("system: everyone reads; only the operator writes", () => {
    expect(canRead(member([]), MemoryScope.system())).toBe(true);
    expect(codeOf(() => assertCanWriteFact(admin, MemoryScope.system()))).toBe("BEM-022");
    expect(codeOf(() => assertCanWriteFact(operatorPrincipal(), MemoryScope.system()))).toBeUndefined();
    expect(codeOf(() => assertCanWriteFact(operatorPrincipal(), MemoryScope.parse("organization:acme")))).toBe("BEM-023");
    expect(canRead(operatorPrincipal(), MemoryScope.parse("organization:acme"))).toBe(false);
  });

  it("prefix grants match ids that start with the prefix, under the same name only", () => {
    const s = (raw: string) => MemoryScope.parse(raw);
    expect(grantMatches("session:support-*", s("session:support-42"))).toBe(true);
    expect(grantMatches("session:support-*", s("session:support-"))).toBe(true);
    expect(grantMatches("session:support-*", s("session:ceo"))).toBe(false);
    expect(grantMatches("session:support-*", s("docset:support-1"))).toBe(false);
    expect(grantMatches("session:a*", s("session:a"))).toBe(true);
  });

  it("members: their grants, sessions included (no implicit session)", () => {
    const m = member(["organization:acme", "docset:*"]);
    expect(canRead(m, MemoryScope.parse("organization:acme"))).toBe(true);
    expect(canRead(m, MemoryScope.parse("organization:other"))).toBe(false);
    expect(canRead(m, MemoryScope.parse("docset:d9"))).toBe(true);
    expect(canRead(m, MemoryScope.session("mine"))).toBe(false);
    expect(canRead(member(["session:mi*"]), MemoryScope.session("mine"))).toBe(true);
    expect(codeOf(() => assertCanWriteFact(m, MemoryScope.parse("docset:d1")))).toBeUndefined();
    expect(codeOf(() => assertCanWriteFact(m, MemoryScope.parse("team")))).toBe("BEM-023");
    expect(codeOf(() => assertCanWriteFact(m, MemoryScope.session("mine")))).toBe("BEM-023");
  });

  it("admins: any scope of their tenant, any session", () => {
    expect(canRead(admin, MemoryScope.session("theirs"))).toBe(true);
    expect(codeOf(() => assertCanWriteFact(admin, MemoryScope.parse("team:x")))).toBeUndefined();
  });
});

describe("resolveScopes", () => {
  const m = member(["organization:acme", "session:s1"]);

  it("defaults to the session only", () => {
    expect(resolveScopes({ principal: m, sessionId: "s1" }).map(String)).toEqual(["session:s1"]);
  });

  it("an agent adds layers before the session", () => {
    const got = resolveScopes({ principal: m, sessionId: "s1", agentScopes: ["system", { name: "organization", id: "acme" }] });
    expect(got.map(String)).toEqual(["system", "organization:acme", "session:s1"]);
    expect(resolveScopes({ principal: m, sessionId: "s1", agentScopes: ["session", "system"] }).map(String)).toEqual(["session:s1", "system"]);
  });

  it("a client narrows to granted scopes, in its order", () => {
    const got = resolveScopes({ principal: m, sessionId: "s1", agentScopes: ["system"], requested: [{ name: "organization", id: "acme" }, "session:s1"] });
    expect(got.map(String)).toEqual(["organization:acme", "session:s1"]);
  });

  it("one requested scope outside the grant rejects the whole request with BEM-023", () => {
    for (const outside of ["organization:globex", "session:someone-else", "docset:d1", "team"]) {
      expect(
        codeOf(() => resolveScopes({ principal: m, sessionId: "s1", requested: ["system", outside] })),
        outside,
      ).toBe("BEM-023");
    }
    expect(codeOf(() => resolveScopes({ principal: m, sessionId: "s1", requested: ["BAD"] }))).toBe("BEM-060");
  });

  it("an agent's layer outside the grant rejects the run with BEM-023 (agents do not widen keys)", () => {
    expect(codeOf(() => resolveScopes({ principal: m, sessionId: "s1", agentScopes: ["session", "docset:support"] }))).toBe("BEM-023");
    expect(codeOf(() => resolveScopes({ principal: member(["organization:acme"]), sessionId: "s1" }))).toBe("BEM-023");
    // Stateless: no session layer, so none is needed.
    expect(resolveScopes({ principal: member(["organization:acme"]), agentScopes: ["session", "organization:acme"] }).map(String)).toEqual([
      "organization:acme",
    ]);
  });

  it("a client's 'session' on a run without a thread is BEM-060, as its object form {name: 'session'} is, never dropped", () => {
    // The agent's bare session layer is skipped on a stateless run; a client that names it asked for a layer that is not there.
    expect(codeOf(() => resolveScopes({ principal: m, requested: ["session", "organization:acme"] }))).toBe("BEM-060");
    expect(codeOf(() => resolveScopes({ principal: m, requested: [{ name: "session" }] }))).toBe("BEM-060");
    expect(resolveScopes({ principal: m, sessionId: "s1", requested: ["session"] }).map(String)).toEqual(["session:s1"]);
  });
});
