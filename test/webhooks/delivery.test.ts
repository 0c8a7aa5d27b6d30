import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import worker from "../../src/index";
import { sign, verify, verifyCallback } from "../../src/webhooks/signature";
import { clearUpstream, mockUpstream } from "../support/upstream";
import { api, createTenant, type TestTenant } from "../support/tenants";
import { deliver, deliveryCount, deliveryRow, nowSeconds, registerHook, threadMessages, waitFor } from "./helpers";
import { loggedLines } from "../support/logs";

let t: TestTenant;
beforeAll(async () => {
  t = await createTenant();
});
afterEach(() => clearUpstream());

const ticket = (id: string, body = "My printer is on fire") => ({ ticket: { id, body }, noise: [1, 2, 3] });
const uid = () => crypto.randomUUID().slice(0, 8);

async function expectError(res: Response, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(((await res.json()) as { error: { code: string } }).error.code).toBe(code);
}

/** A rejected delivery leaves no delivery row and no thread. */
async function expectNothingStored(hookId: string, threadId: string) {
  expect(await deliveryCount(hookId)).toBe(0);
  expect(await threadMessages(t, threadId)).toEqual([]);
}

describe("signed delivery", () => {
  it("accepts a signed payload with 202 and stores the turn in the payload's thread", async () => {
    const hook = await registerHook(t);
    const thread = `tk-${uid()}`;
    const res = await deliver(hook, ticket(thread), { deliveryId: "d-1" });
    expect(res.status).toBe(202);
    expect(await res.json()).toEqual({ delivery_id: "d-1", status: "accepted" });

    const row = await waitFor("delivery done", async () => {
      const r = await deliveryRow(hook.id, "d-1");
      return r?.status === "done" ? r : undefined;
    });
    const result = JSON.parse(row.result ?? "{}") as { reply: string; model: string; thread_id: string };
    expect(result.thread_id).toBe(thread);
    expect(result.model).toBe("offline-echo");
    const msgs = await threadMessages(t, thread);
    expect(msgs.map((m) => m.role)).toEqual(["user", "assistant"]);
    expect(msgs[0]!.content).toBe("My printer is on fire");
    expect(msgs[1]!.content).toBe(result.reply);
  });

  it("a delivery's text is kept only until its turn stored it: the settled row holds no copy (D1 grew by each payload, up to 256 KiB, forever)", async () => {
    const hook = await registerHook(t);
    const thread = `tk-${uid()}`;
    const text = `Long ticket ${"x".repeat(100_000)}`;
    expect((await deliver(hook, ticket(thread, text), { deliveryId: "d-kept" })).status).toBe(202);
    expect((await deliveryRow(hook.id, "d-kept"))?.input.length).toBeGreaterThan(0); // the queued turn reads it
    const row = await waitFor("delivery done", async () => {
      const r = await deliveryRow(hook.id, "d-kept");
      return r?.status === "done" ? r : undefined;
    });
    expect(row.input).toBe("");
    expect((await threadMessages(t, thread))[0]!.content).toBe(text);
    // The row still makes a repeat a duplicate.
    const again = await deliver(hook, ticket(thread, text), { deliveryId: "d-kept" });
    expect(again.headers.get("x-edgeweave-duplicate")).toBe("1");
  });

  it("uses the SHA-256 of the body as the delivery id when the header is absent", async () => {
    const hook = await registerHook(t);
    const raw = JSON.stringify(ticket(`tk-${uid()}`));
    const res = await deliver(hook, raw);
    expect(res.status).toBe(202);
    const digest = Array.from(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(raw))), (b) =>
      b.toString(16).padStart(2, "0"),
    ).join("");
    expect(((await res.json()) as { delivery_id: string }).delivery_id).toBe(digest);
  });

  it("accepts a number as the thread id", async () => {
    const hook = await registerHook(t);
    const n = Math.floor(Math.random() * 1e9);
    expect((await deliver(hook, { ticket: { id: n, body: "numbered" } })).status).toBe(202);
    await waitFor("turn stored", async () => ((await threadMessages(t, String(n))).length === 2 ? true : undefined));
  });

  it("missing signature headers → 401 BEM-090, nothing stored", async () => {
    const hook = await registerHook(t);
    const thread = `tk-${uid()}`;
    await expectError(await deliver(hook, ticket(thread), { signature: null }), 401, "BEM-090");
    const noTs = await exports.default.fetch(`http://x/v1/webhooks/${hook.id}`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-edgeweave-signature": await sign(hook.secret, String(nowSeconds()), "{}") },
      body: "{}",
    });
    await expectError(noTs, 401, "BEM-090");
    await expectNothingStored(hook.id, thread);
  });

  it("a wrong secret, a tampered body, a malformed header → 401 BEM-090, nothing stored", async () => {
    const hook = await registerHook(t);
    const thread = `tk-${uid()}`;
    await expectError(await deliver(hook, ticket(thread), { secret: "whsec_not-the-secret" }), 401, "BEM-090");
    const ts = String(nowSeconds());
    const signedForOther = await sign(hook.secret, ts, JSON.stringify(ticket(thread, "original")));
    await expectError(await deliver(hook, ticket(thread, "tampered"), { timestamp: ts, signature: signedForOther }), 401, "BEM-090");
    await expectError(await deliver(hook, ticket(thread), { signature: "sha256=zz" }), 401, "BEM-090");
    await expectError(await deliver(hook, ticket(thread), { signature: "md5=abc" }), 401, "BEM-090");
    // A signature over a different timestamp than the one sent.
    const other = await sign(hook.secret, String(nowSeconds() - 1), JSON.stringify(ticket(thread)));
    await expectError(await deliver(hook, ticket(thread), { signature: other }), 401, "BEM-090");
    await expectNothingStored(hook.id, thread);
  });

  it("a validly signed but old timestamp (replay) → 401 BEM-091; so is one from the future", async () => {
    const hook = await registerHook(t);
    const thread = `tk-${uid()}`;
    // 10 s past the 300 s window either way: the worker reads its clock a moment after this test does
    // (seconds later on a loaded machine), which moved a timestamp 301 s ahead back inside the window.
    await expectError(await deliver(hook, ticket(thread), { timestamp: nowSeconds() - 310 }), 401, "BEM-091");
    await expectError(await deliver(hook, ticket(thread), { timestamp: nowSeconds() + 310 }), 401, "BEM-091");
    await expectError(await deliver(hook, ticket(thread), { timestamp: "12abc" }), 401, "BEM-090");
    await expectNothingStored(hook.id, thread);
    // Just inside the window is fine.
    expect((await deliver(hook, ticket(thread), { timestamp: nowSeconds() - 290 })).status).toBe(202);
  });

  it("a body over 256 KiB → 413 BEM-013 (by Content-Length and when streamed without one), nothing stored", async () => {
    const hook = await registerHook(t);
    const thread = `tk-${uid()}`;
    const big = ticket(thread, "x".repeat(256 * 1024));
    await expectError(await deliver(hook, big), 413, "BEM-013");

    const raw = new TextEncoder().encode(JSON.stringify(big));
    const ts = String(nowSeconds());
    const stream = new ReadableStream<Uint8Array>({
      start(ctl) {
        for (let i = 0; i < raw.length; i += 16_384) ctl.enqueue(raw.slice(i, i + 16_384));
        ctl.close();
      },
    });
    const res = await exports.default.fetch(`http://x/v1/webhooks/${hook.id}`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-edgeweave-timestamp": ts, "x-edgeweave-signature": await sign(hook.secret, ts, raw) },
      body: stream,
    });
    await expectError(res, 413, "BEM-013");
    await expectNothingStored(hook.id, thread);
  });

  it("an unknown hook → 404 BEM-093", async () => {
    await expectError(await deliver({ id: "wh_doesnotexist", secret: "whsec_x" }, ticket("a")), 404, "BEM-093");
  });

  it("a payload without the configured fields → 422 BEM-095; bad JSON → 400 BEM-010; nothing stored", async () => {
    const hook = await registerHook(t);
    await expectError(await deliver(hook, { ticket: { body: "no id" } }), 422, "BEM-095");
    await expectError(await deliver(hook, { ticket: { id: "ok-id", body: 42 } }), 422, "BEM-095");
    await expectError(await deliver(hook, { ticket: { id: "bad id with spaces", body: "x" } }), 422, "BEM-095");
    await expectError(await deliver(hook, { ticket: { id: "ok", body: "   " } }), 422, "BEM-095");
    await expectError(await deliver(hook, "{not json"), 400, "BEM-010");
    expect(await deliveryCount(hook.id)).toBe(0);
  });
});

describe("idempotency", () => {
  it("a repeated delivery answers the same 202 and runs no second turn", async () => {
    const hook = await registerHook(t);
    const thread = `tk-${uid()}`;
    const first = await deliver(hook, ticket(thread), { deliveryId: "same" });
    const firstBody = await first.text();
    await waitFor("first done", async () => ((await deliveryRow(hook.id, "same"))?.status === "done" ? true : undefined));
    // Same id, even with a different (validly signed) body and a new timestamp.
    const again = await deliver(hook, ticket(thread, "different text"), { deliveryId: "same" });
    expect(again.status).toBe(202);
    expect(await again.text()).toBe(firstBody);
    expect(again.headers.get("x-edgeweave-duplicate")).toBe("1");
    await new Promise((r) => setTimeout(r, 1500)); // longer than the queue's batch timeout
    expect((await threadMessages(t, thread)).length).toBe(2);
  });

  it("two identical deliveries arriving together make one turn", async () => {
    const hook = await registerHook(t);
    const thread = `tk-${uid()}`;
    const raw = JSON.stringify(ticket(thread));
    const ts = String(nowSeconds());
    const signature = await sign(hook.secret, ts, raw);
    const [a, b] = await Promise.all([deliver(hook, raw, { timestamp: ts, signature }), deliver(hook, raw, { timestamp: ts, signature })]);
    expect([a.status, b.status]).toEqual([202, 202]);
    expect(await a.text()).toBe(await b.text());
    expect([a.headers.get("x-edgeweave-duplicate"), b.headers.get("x-edgeweave-duplicate")].filter(Boolean)).toHaveLength(1);
    expect(await deliveryCount(hook.id)).toBe(1);
    await waitFor("turn stored", async () => ((await threadMessages(t, thread)).length >= 2 ? true : undefined));
    await new Promise((r) => setTimeout(r, 1500));
    expect((await threadMessages(t, thread)).map((m) => m.role)).toEqual(["user", "assistant"]);
  });
});

describe("callbacks", () => {
  it("POSTs the reply to callback_url, signed with the hook's secret (the v2 callback scheme)", async () => {
    const received: { body: string; ts: string; sig: string }[] = [];
    mockUpstream("https://hooks.example.com", async (req) => {
      received.push({ body: await req.text(), ts: req.headers.get("x-edgeweave-timestamp") ?? "", sig: req.headers.get("x-edgeweave-signature") ?? "" });
      return new Response("ok");
    });
    const hook = await registerHook(t, { callback_url: "https://hooks.example.com/in" });
    const thread = `tk-${uid()}`;
    expect((await deliver(hook, ticket(thread), { deliveryId: "cb-1" })).status).toBe(202);
    const got = await waitFor("callback", async () => received[0]);
    expect(await verifyCallback(hook.secret, got.ts, got.body, got.sig)).toBe(true);
    expect(await verifyCallback("whsec_other", got.ts, got.body, got.sig)).toBe(false);
    expect(Math.abs(Number(got.ts) - nowSeconds())).toBeLessThan(60);
    const payload = JSON.parse(got.body) as Record<string, unknown>;
    expect(payload).toMatchObject({ webhook_id: hook.id, delivery_id: "cb-1", thread_id: thread, model: "offline-echo" });
    const msgs = await threadMessages(t, thread);
    expect(payload.reply).toBe(msgs[1]!.content);
    await waitFor("delivery done", async () => ((await deliveryRow(hook.id, "cb-1"))?.status === "done" ? true : undefined));
    expect(received).toHaveLength(1);
  });

  it("a callback posted back to its hook is refused: callbacks are signed as v2 over another string (issue 25, finding 5)", async () => {
    const received: { body: string; ts: string; sig: string }[] = [];
    mockUpstream("https://mirror.example.com", async (req) => {
      received.push({ body: await req.text(), ts: req.headers.get("x-edgeweave-timestamp") ?? "", sig: req.headers.get("x-edgeweave-signature") ?? "" });
      return new Response("ok");
    });
    // Pointers that match the callback's own payload, so a reflected callback would name a thread and a text.
    const hook = await registerHook(t, { callback_url: "https://mirror.example.com/in", thread_from: "/thread_id", text_from: "/reply" });
    const thread = `tk-${uid()}`;
    expect((await deliver(hook, { thread_id: thread, reply: "Hello, echo me" }, { deliveryId: "mirror-1" })).status).toBe(202);
    const got = await waitFor("callback", async () => received[0]);
    await waitFor("delivery done", async () => ((await deliveryRow(hook.id, "mirror-1"))?.status === "done" ? true : undefined));
    const { body, ts, sig } = got;

    // The documented scheme, computed here independently: v2=<hex HMAC-SHA256 of "callback.<timestamp>.<raw body>">.
    const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(hook.secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
    const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(`callback.${ts}.${body}`)));
    expect(sig).toBe(`v2=${[...mac].map((b) => b.toString(16).padStart(2, "0")).join("")}`);
    expect(await verify(hook.secret, ts, new TextEncoder().encode(body), sig.replace(/^v2=/, "sha256="))).toBe(false);

    // Posted back as received, or with its MAC relabelled as a delivery signature: 401, no second turn.
    const before = await threadMessages(t, thread);
    for (const [i, signature] of [sig, sig.replace(/^v2=/, "sha256=")].entries()) {
      const res = await deliver(hook, body, { timestamp: ts, signature, deliveryId: `reflected-${i}` });
      expect(res.status, signature).toBe(401);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe("BEM-090");
    }
    expect(await deliveryCount(hook.id)).toBe(1);
    expect(await threadMessages(t, thread)).toEqual(before);
  });

  it("retries a failing receiver within the task (bounded) and succeeds", async () => {
    let calls = 0;
    mockUpstream("https://flaky.example.com", () => (++calls < 3 ? new Response("busy", { status: 503 }) : new Response("ok")));
    const hook = await registerHook(t, { callback_url: "https://flaky.example.com/in" });
    expect((await deliver(hook, ticket(`tk-${uid()}`), { deliveryId: "flaky" })).status).toBe(202);
    const row = await waitFor("delivery done", async () => {
      const r = await deliveryRow(hook.id, "flaky");
      return r?.status === "done" ? r : undefined;
    });
    expect(calls).toBe(3);
    expect(JSON.parse(row.result ?? "{}")).toMatchObject({ callback: { status: "sent", attempts: 3, http_status: 200 } });
  });

  it("a 4xx from the receiver is final: no retries, recorded as rejected", async () => {
    let calls = 0;
    mockUpstream("https://strict.example.com", () => {
      calls++;
      return new Response("no", { status: 410 });
    });
    const hook = await registerHook(t, { callback_url: "https://strict.example.com/in" });
    expect((await deliver(hook, ticket(`tk-${uid()}`), { deliveryId: "gone" })).status).toBe(202);
    const row = await waitFor("delivery done", async () => {
      const r = await deliveryRow(hook.id, "gone");
      return r?.status === "done" ? r : undefined;
    });
    expect(calls).toBe(1);
    expect(JSON.parse(row.result ?? "{}")).toMatchObject({ callback: { status: "rejected", http_status: 410 } });
  });
});

describe("registration", () => {
  it("shows the secret once; lists without secrets; admin only; delete makes deliveries 404", async () => {
    const hook = await registerHook(t, { callback_url: "https://hooks.example.com/x" });
    expect(hook.secret).toMatch(/^whsec_[0-9a-f]{64}$/);
    const list = await api("/v1/webhooks", { key: t.adminKey });
    expect(list.status).toBe(200);
    const text = await list.text();
    expect(text).toContain(hook.id);
    expect(text).not.toContain(hook.secret);
    expect(text).not.toContain("secret");

    await expectError(await api("/v1/webhooks", { key: t.memberKey }), 403, "BEM-022");
    await expectError(
      await api("/v1/webhooks", { key: t.memberKey, body: { name: "x", agent_name: "assistant", thread_from: "/a", text_from: "/b" } }),
      403,
      "BEM-022",
    );

    const other = await createTenant();
    await expectError(await api(`/v1/webhooks/${hook.id}`, { method: "DELETE", key: other.adminKey }), 404, "BEM-093");
    expect(await (await api("/v1/webhooks", { key: other.adminKey })).json()).toEqual({ webhooks: [], next_cursor: null });

    expect((await api(`/v1/webhooks/${hook.id}`, { method: "DELETE", key: t.adminKey })).status).toBe(200);
    await expectError(await deliver(hook, ticket("after-delete")), 404, "BEM-093");
  });

  it("scopes that miss a layer of the agent → 403 BEM-023 naming the layer and the hook's scopes, not the key's grants", async () => {
    // The registering admin key holds organization:acme; only the hook's scopes lack it.
    const body = { name: "x", agent_name: "assistant", thread_from: "/a", text_from: "/b", scopes: ["session:hook-*"], rewrite_history: true };
    const res = await api("/v1/webhooks", { key: t.adminKey, body });
    expect(res.status).toBe(403);
    expect(((await res.json()) as { error: { code: string; message: string } }).error).toEqual({
      code: "BEM-023",
      message: "The agent 'assistant' loads 'organization:acme', which the webhook's scopes do not cover: add it to scopes",
    });
    expect((await api("/v1/webhooks", { key: t.adminKey, body: { ...body, scopes: ["session:hook-*", "organization:acme"] } })).status).toBe(201);
  });

  it("scopes without a session: grant → 422 BEM-161 naming the missing grant, nothing stored (issue 24, item 4)", async () => {
    // planner loads no layer, so before this a hook without scopes was accepted and every delivery was 403 BEM-025.
    const base = { name: "no-threads", agent_name: "planner", thread_from: "/t", text_from: "/x" };
    const count = () => env.DB.prepare("SELECT COUNT(*) AS n FROM webhooks WHERE tenant_id = ?").bind(t.tenant).first<{ n: number }>();
    const before = await count();
    for (const scopes of [undefined, [], ["organization:acme"], ["docset:*"]]) {
      const res = await api("/v1/webhooks", { key: t.adminKey, body: { ...base, ...(scopes ? { scopes } : {}) } });
      expect(res.status, JSON.stringify(scopes)).toBe(422);
      const { error } = (await res.json()) as { error: { code: string; message: string } };
      expect(error.code).toBe("BEM-161");
      expect(error.message).toContain("session:");
    }
    expect(await count()).toEqual(before);
    // Any grant reaching a thread will do: a prefix, one thread, or every one.
    for (const scopes of [["session:ticket-*"], ["session:ticket-1"], ["session:*"], ["*"]]) {
      expect((await api("/v1/webhooks", { key: t.adminKey, body: { ...base, scopes } })).status, JSON.stringify(scopes)).toBe(201);
    }
  });

  it("rejects an unknown agent, a bad pointer and a disallowed callback", async () => {
    const base = { name: "x", agent_name: "assistant", thread_from: "/a", text_from: "/b", scopes: ["session:*", "organization:acme"], rewrite_history: true };
    await expectError(await api("/v1/webhooks", { key: t.adminKey, body: { ...base, agent_name: "nobody" } }), 404, "BEM-047");
    await expectError(await api("/v1/webhooks", { key: t.adminKey, body: { ...base, thread_from: "a/b" } }), 400, "BEM-011");
    await expectError(await api("/v1/webhooks", { key: t.adminKey, body: { ...base, text_from: "/a~2" } }), 400, "BEM-011");
    // Tests run with ALLOW_PRIVATE_CALLBACKS=1, which still refuses non-http(s) schemes and credentials.
    await expectError(await api("/v1/webhooks", { key: t.adminKey, body: { ...base, callback_url: "ftp://example.com/x" } }), 400, "BEM-094");
    await expectError(await api("/v1/webhooks", { key: t.adminKey, body: { ...base, callback_url: "https://u:p@example.com/x" } }), 400, "BEM-094");
    await expectError(await api("/v1/webhooks", { key: t.adminKey, body: { ...base, callback_url: "not a url" } }), 400, "BEM-094");
  });
});

describe("secrets", () => {
  it("the hook secret never reaches a log line, whatever happens to the delivery", async () => {
    const lines: string[] = [];
    const spies = (["log", "info", "warn", "error", "debug"] as const).map((level) =>
      vi.spyOn(console, level).mockImplementation((...args: unknown[]) => void lines.push(args.map(String).join(" "))),
    );
    try {
      mockUpstream("https://hooks.example.com", () => new Response("ok"));
      const hook = await registerHook(t, { callback_url: "https://hooks.example.com/s" });
      await deliver(hook, ticket("s-1"), { secret: "whsec_wrong" });
      await deliver(hook, ticket("s-1"), { timestamp: nowSeconds() - 3600 });
      await deliver(hook, "{bad json");
      expect((await deliver(hook, ticket(`tk-${uid()}`), { deliveryId: "s-ok" })).status).toBe(202);
      await waitFor("done", async () => ((await deliveryRow(hook.id, "s-ok"))?.status === "done" ? true : undefined));
      lines.push(...loggedLines()); // the worker's logger writes to the test capture
      expect(lines.join("\n")).not.toContain(hook.secret);
      expect(lines.join("\n")).not.toContain(hook.secret.slice(6, 30));
    } finally {
      for (const s of spies) s.mockRestore();
    }
  });
});

describe("delivery records", () => {
  it("the hourly cron removes a delivery's record 30 days after its last change: its id may run again, newer records stay", async () => {
    const hook = await registerHook(t);
    const thread = `tk-${uid()}`;
    // Each request its own body: the same body signed in the same second would be a replay of the first.
    for (const id of ["d-old", "d-new"]) expect((await deliver(hook, ticket(thread, `first ${id}`), { deliveryId: id })).status).toBe(202);
    for (const id of ["d-old", "d-new"]) await waitFor(`${id} done`, async () => ((await deliveryRow(hook.id, id))?.status === "done" ? true : undefined));
    const day = 86_400_000;
    await env.DB.prepare("UPDATE webhook_deliveries SET updated_at = ? WHERE webhook_id = ? AND delivery_id = ?")
      .bind(Date.now() - 30 * day - 60_000, hook.id, "d-old")
      .run();
    await env.DB.prepare("UPDATE webhook_deliveries SET updated_at = ? WHERE webhook_id = ? AND delivery_id = ?")
      .bind(Date.now() - 29 * day, hook.id, "d-new")
      .run();
    const ec = createExecutionContext();
    await worker.scheduled(createScheduledController({ scheduledTime: Date.now(), cron: "17 * * * *" }), env, ec);
    await waitOnExecutionContext(ec);
    expect(await deliveryRow(hook.id, "d-old")).toBeNull();
    expect((await deliveryRow(hook.id, "d-new"))?.status).toBe("done");
    // A repeat of a purged id is a new delivery (a month past any sender's retries); one of a kept id is still a duplicate.
    expect((await deliver(hook, ticket(thread, "again d-new"), { deliveryId: "d-new" })).headers.get("x-edgeweave-duplicate")).toBe("1");
    const again = await deliver(hook, ticket(thread, "again d-old"), { deliveryId: "d-old" });
    expect(again.status).toBe(202);
    expect(again.headers.get("x-edgeweave-duplicate")).toBeNull();
  });
});
