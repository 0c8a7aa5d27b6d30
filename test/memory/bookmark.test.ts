/**
 * Facts through D1's Sessions API: writes answer a bookmark, runs and reads that send it
 * back are served at least that fresh, and a thread object keeps the newest it has seen.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { newerBookmark, parseBookmark } from "../../src/memory/bookmark";
import { isAppError } from "../../src/core/errors";
import { threadObjectName } from "../../src/thread/thread-id";
import { uniqueThread } from "../support/runs";
import { api, createKey, createTenant } from "../support/tenants";

const H = "X-Edgeweave-Bookmark";

describe("facts bookmarks", () => {
  it("a fact write answers a bookmark; a run carrying it sees the fact; the thread keeps the newest bookmark", async () => {
    const t = await createTenant();
    const res = await api("/v1/memory/facts", { key: t.adminKey, body: { scope: "organization:acme", kind: "style", text: "Answer in haiku." } });
    expect(res.status).toBe(201);
    const bookmark = res.headers.get(H);
    expect(bookmark).toMatch(/^[0-9a-f]{8}-/);

    const thread = uniqueThread("bm");
    const run = await api("/v1/chat/completions", {
      key: t.adminKey,
      headers: { [H]: bookmark! },
      body: { model: "auto", thread_id: thread, memory_scopes: ["session", "organization:acme"], messages: [{ role: "user", content: "hi" }] },
    });
    expect(run.status, await run.clone().text()).toBe(200);
    const reply = ((await run.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content;
    expect(reply).toContain("Answer in haiku.");

    const stub = env.THREADS.get(env.THREADS.idFromName(threadObjectName(t.tenant, thread)));
    const kept = await runInDurableObject(
      stub,
      (_o, state) => state.storage.sql.exec<{ value: string }>(`SELECT value FROM meta WHERE key = 'facts_bookmark'`).toArray()[0]?.value,
    );
    expect(kept).toBeDefined();
    expect(kept! >= bookmark!).toBe(true);

    // Reads answer the bookmark they were served at, never older than the one sent.
    const listed = await api("/v1/memory/facts?scope=organization:acme", { key: t.adminKey, headers: { [H]: bookmark! } });
    expect(listed.status).toBe(200);
    expect(listed.headers.get(H)! >= bookmark!).toBe(true);
  });

  it("a bookmark D1 refuses (well-formed, never issued) fails its own turn only: the thread does not keep it for the turns after", async () => {
    const t = await createTenant();
    const thread = uniqueThread("bm");
    const forged = "ffffffff-ffffffff-ffffffff-00000000000000000000000000000000";
    // D1's side of it: a session started from a position the database never reached answers every query with an error.
    const db = Object.getPrototypeOf(env.DB) as D1Database;
    const withSession = db.withSession;
    vi.spyOn(db, "withSession").mockImplementation(function (this: D1Database, constraint?: string) {
      if (constraint !== forged) return withSession.call(this, constraint);
      const refuse = () => Promise.reject(new Error("D1_ERROR: bookmark ahead of the database"));
      const stmt = { bind: () => stmt, run: refuse, all: refuse, first: refuse, raw: refuse };
      return { prepare: () => stmt, batch: refuse, getBookmark: () => forged } as unknown as D1DatabaseSession;
    });
    const member = await createKey(t.tenant, { role: "member", scopes: [`session:${thread}`, "organization:acme"] });
    const run = (headers: Record<string, string>) =>
      api("/v1/chat/completions", {
        key: member.key,
        headers,
        body: { model: "auto", thread_id: thread, memory_scopes: ["session", "organization:acme"], messages: [{ role: "user", content: "hi" }] },
      });
    try {
      expect((await run({})).status).toBe(200);
      const refused = await run({ [H]: forged });
      expect(refused.status).toBe(503);
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("BEM-065");
      // One key's header must not become the constraint of every later turn on the thread, whoever runs them.
      expect((await run({})).status).toBe(200);
    } finally {
      vi.restoreAllMocks();
    }
  });

  it("a malformed bookmark is a coded 400 before anything runs", async () => {
    const t = await createTenant();
    const thread = uniqueThread("bm");
    const res = await api("/v1/chat/completions", {
      key: t.adminKey,
      headers: { [H]: "not a bookmark; drop table" },
      body: { model: "auto", thread_id: thread, messages: [{ role: "user", content: "hi" }] },
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("BEM-160");
    const state = await api(`/v1/threads/${thread}/state`, { key: t.adminKey });
    expect(state.status).toBe(404);
  });

  it("newerBookmark keeps the later position; parseBookmark refuses what D1 never issues", () => {
    expect(newerBookmark("00000002-00000001-00000000-aa", "00000001-00000009-00000000-bb")).toBe("00000002-00000001-00000000-aa");
    expect(newerBookmark(undefined, "00000001-00000000-00000000-cc")).toBe("00000001-00000000-00000000-cc");
    expect(newerBookmark("00000001-00000000-00000000-cc", null)).toBe("00000001-00000000-00000000-cc");
    expect(parseBookmark(undefined)).toBeUndefined();
    expect(parseBookmark("00000001-00000000-00000000-cc")).toBe("00000001-00000000-00000000-cc");
    for (const bad of ["a b", "x".repeat(201), "é"]) {
      let code: string | undefined;
      try {
        parseBookmark(bad);
      } catch (e) {
        code = isAppError(e) ? e.code : String(e);
      }
      expect(code).toBe("BEM-160");
    }
  });
});
