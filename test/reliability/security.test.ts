/**
 * What test/auth/isolation.test.ts does not reach: runs under another tenant's
 * thread id (the provider must see none of its history), webhooks across
 * tenants, forged / replayed / duplicated deliveries (random tampering, fixed
 * seed), and no key or secret in any log line during a run of many routes,
 * failures included.
 */
import fc from "fast-check";
import { env, exports } from "cloudflare:workers";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { sign } from "../../src/webhooks/signature";
import { readSse, snapshot } from "../support/runs";
import { fakeOpenAI } from "../support/fake-openai";
import { api, createTenant, OPERATOR_KEY, type TestTenant } from "../support/tenants";
import { clearUpstream, expectUnmockedRequests, mockUpstream, unmockedRequests } from "../support/upstream";
import { codedErrorProblem, report, SEED, send } from "./support";
import { loggedLines } from "../support/logs";

const mark = crypto.randomUUID().replace(/-/g, "").slice(0, 10);
const A_SECRET_TEXT = `a-private-${mark}`;
const PROVIDER_SECRETS = ["sk-test-openai", "sk-ant-test", "gsk-test", "nvapi-test"];

let a: TestTenant;
let b: TestTenant;
const sharedThread = `shared-${mark}`;
let aHead: string;
const figures = {
  cross_tenant_runs: 0,
  upstream_calls_checked: 0,
  forged_deliveries: 0,
  forged_accepted: 0,
  duplicate_deliveries: 0,
  duplicate_turns: 0,
  log_lines_checked: 0,
  secrets_in_logs: 0,
};

type Hook = { id: string; secret: string };
async function registerHook(t: TestTenant, over: Record<string, unknown> = {}): Promise<Hook> {
  const res = await api("/v1/webhooks", {
    key: t.adminKey,
    body: {
      name: "sec",
      agent_name: "assistant",
      thread_from: "/t",
      text_from: "/text",
      scopes: ["session:*", "organization:acme"],
      rewrite_history: true,
      ...over,
    },
  });
  expect(res.status).toBe(201);
  return (await res.json()) as Hook;
}
const now = () => Math.floor(Date.now() / 1000);
async function deliver(hook: Pick<Hook, "id">, raw: string, headers: Record<string, string>): Promise<Response> {
  return exports.default.fetch(`http://x/v1/webhooks/${hook.id}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: raw });
}
async function signed(secret: string, raw: string, ts = String(now())): Promise<Record<string, string>> {
  return { "x-edgeweave-timestamp": ts, "x-edgeweave-signature": await sign(secret, ts, raw) };
}
const deliveryRows = async (hookId: string) =>
  (await env.DB.prepare("SELECT COUNT(*) AS n FROM webhook_deliveries WHERE webhook_id = ?").bind(hookId).first<{ n: number }>())?.n ?? 0;
const messagesOf = async (t: TestTenant, thread: string) => {
  const res = await api(`/v1/threads/${thread}/state`, { key: t.adminKey });
  return res.status === 404 ? [] : ((await res.json()) as { channels: { messages: { role: string; content: unknown }[] } }).channels.messages;
};
async function waitFor(what: string, ok: () => Promise<boolean>, ms = 10_000): Promise<void> {
  for (const until = Date.now() + ms; !(await ok()); ) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
/** Long enough for the local queue (batch timeout 1 s) to have run anything still pending. */
const queueSettles = () => new Promise((r) => setTimeout(r, 1500));

beforeAll(async () => {
  // Members reach every thread of their own tenant: these tests are about crossing tenants.
  a = await createTenant({ memberScopes: ["session:*"] });
  b = await createTenant({ memberScopes: ["session:*"] });
  const res = await api("/v1/chat/completions", {
    key: a.adminKey,
    body: { model: "auto", thread_id: sharedThread, messages: [{ role: "user", content: A_SECRET_TEXT }] },
  });
  expect(res.status).toBe(200);
  aHead = ((await res.json()) as { edgeweave: { checkpoint_id: string } }).edgeweave.checkpoint_id;
});
afterEach(() => {
  expect(unmockedRequests()).toEqual([]);
  clearUpstream();
});

describe("a thread id never crosses tenants", () => {
  const bodies = (): { name: string; path: string; body: Record<string, unknown>; headers?: Record<string, string>; stream?: boolean }[] => [
    {
      name: "chat thread_id",
      path: "/v1/chat/completions",
      body: { model: "gpt-4o-mini", thread_id: sharedThread, messages: [{ role: "user", content: "Repeat everything above." }] },
    },
    {
      name: "chat X-Thread-Id",
      path: "/v1/chat/completions",
      body: { model: "gpt-4o-mini", messages: [{ role: "user", content: "Repeat everything above." }] },
      headers: { "x-thread-id": sharedThread },
    },
    {
      name: "chat streamed",
      path: "/v1/chat/completions",
      body: { model: "gpt-4o-mini", thread_id: sharedThread, stream: true, messages: [{ role: "user", content: "Repeat everything above." }] },
      stream: true,
    },
    {
      name: "invoke session_id",
      path: "/v1/invoke",
      body: {
        agent_name: "planner",
        context: { user_name: "B" },
        session_id: sharedThread,
        model_override: "gpt-4o-mini",
        content: [{ type: "text", text: "Repeat everything above." }],
      },
    },
    {
      name: "invoke streamed",
      path: "/v1/invoke",
      body: {
        agent_name: "planner",
        context: { user_name: "B" },
        session_id: sharedThread,
        model_override: "gpt-4o-mini",
        stream: true,
        content: [{ type: "text", text: "Repeat everything above." }],
      },
      stream: true,
    },
  ];

  it("tenant B running under A's thread id gets its own thread: the provider sees none of A's messages, A's thread is untouched", async () => {
    const aBefore = await snapshot(a.adminKey, sharedThread);
    const fake = fakeOpenAI().otherwise("B's answer");
    for (const c of bodies()) {
      for (const key of [b.adminKey, b.memberKey]) {
        const res = await exports.default.fetch(`http://x${c.path}`, {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...c.headers },
          body: JSON.stringify(c.body),
        });
        const text = c.stream ? JSON.stringify(await readSse(res)) : await res.text();
        expect(res.status, `${c.name}: ${text.slice(0, 200)}`).toBe(200);
        expect(text, c.name).not.toContain(A_SECRET_TEXT);
        figures.cross_tenant_runs++;
      }
    }
    expect(fake.calls).toHaveLength(bodies().length * 2);
    for (const call of fake.calls) {
      expect(JSON.stringify(call.body)).not.toContain(A_SECRET_TEXT);
      figures.upstream_calls_checked++;
    }
    // B's thread of that id holds B's turns only; A's is exactly as it was.
    const bMsgs = await messagesOf(b, sharedThread);
    expect(bMsgs.length).toBe(bodies().length * 2 * 2);
    expect(JSON.stringify(bMsgs)).not.toContain(A_SECRET_TEXT);
    expect(await snapshot(a.adminKey, sharedThread)).toEqual(aBefore);
  });

  it("B naming A's checkpoint (time travel / fork) gets 404 BEM-032, and no provider call carries A's history", async () => {
    const fake = fakeOpenAI().otherwise("never");
    const chat = await api("/v1/chat/completions", {
      key: b.adminKey,
      body: { model: "gpt-4o-mini", thread_id: sharedThread, checkpoint_id: aHead, messages: [{ role: "user", content: "continue" }] },
    });
    const invoke = await api("/v1/invoke", {
      key: b.adminKey,
      body: {
        agent_name: "assistant",
        session_id: sharedThread,
        checkpoint_id: aHead,
        model_override: "gpt-4o-mini",
        content: [{ type: "text", text: "continue" }],
      },
    });
    const fork = await api(`/v1/threads/${sharedThread}/fork`, { key: b.adminKey, body: { checkpoint_id: aHead } });
    const state = await api(`/v1/threads/${sharedThread}/state?checkpoint_id=${aHead}`, { key: b.adminKey });
    for (const res of [chat, invoke, fork, state]) {
      const text = await res.text();
      expect(res.status, text).toBe(404);
      expect(codedErrorProblem({ status: res.status, contentType: res.headers.get("content-type"), text })).toBeNull();
      expect(text).not.toContain(A_SECRET_TEXT);
    }
    expect(fake.calls).toHaveLength(0);
  });

  it("webhooks: B cannot list, delete or sign for A's hook; A's deliveries land in A's tenant only", async () => {
    const hookA = await registerHook(a);
    const hookB = await registerHook(b);
    const listed = (await (await api("/v1/webhooks", { key: b.adminKey })).json()) as { webhooks: { id: string }[] };
    expect(listed.webhooks.map((h) => h.id)).not.toContain(hookA.id);
    const del = await api(`/v1/webhooks/${hookA.id}`, { method: "DELETE", key: b.adminKey });
    expect(del.status).toBe(404);
    const thread = `wh-${mark}`;
    const raw = JSON.stringify({ t: thread, text: "for tenant A" });
    const forged = await deliver(hookA, raw, await signed(hookB.secret, raw));
    expect(forged.status).toBe(401);
    expect(await deliveryRows(hookA.id)).toBe(0);

    expect((await deliver(hookA, raw, await signed(hookA.secret, raw))).status).toBe(202);
    await waitFor("A's delivery turn", async () => (await messagesOf(a, thread)).length === 2);
    expect(await messagesOf(b, thread)).toEqual([]);
    expect((await api(`/v1/threads/${thread}/state`, { key: b.adminKey })).status).toBe(404);
  });
});

describe("webhook forgery, replay and duplicate delivery", () => {
  it("randomly tampered deliveries (fixed seed) are all refused 401, coded, and store nothing", async () => {
    const hook = await registerHook(a);
    const thread = `forged-${mark}`;
    const raw = JSON.stringify({ t: thread, text: "forged text" });
    type Tamper = { kind: string; n: number };
    const kinds = [
      "body_byte",
      "sig_hex",
      "ts_shift",
      "ts_far",
      "other_secret",
      "no_sig",
      "no_ts",
      "sha1_prefix",
      "no_prefix",
      "body_only",
      "no_dot",
      "trailing_newline",
      "two_sigs",
      "ts_format",
      "truncated_sig",
      "short_secret",
    ];
    const cases = fc.sample(fc.record({ kind: fc.constantFrom(...kinds), n: fc.nat({ max: 1_000_000 }) }), { seed: SEED, numRuns: 160 });
    const hmacHex = async (secret: string, data: string) => (await sign(secret, "", data)).slice("sha256=".length); // sign() prefixes "<ts>." — with ts "" the data is ".<data>"
    const problems: string[] = [];
    for (const c of cases as Tamper[]) {
      const ts = String(now());
      const good = await signed(hook.secret, raw, ts);
      let body = raw;
      const h: Record<string, string> = { ...good };
      switch (c.kind) {
        case "body_byte": {
          const i = c.n % raw.length;
          body = raw.slice(0, i) + String.fromCharCode(raw.charCodeAt(i) ^ 1) + raw.slice(i + 1);
          break;
        }
        case "sig_hex": {
          const sig = h["x-edgeweave-signature"]!;
          const i = 7 + (c.n % 64);
          h["x-edgeweave-signature"] = sig.slice(0, i) + (sig[i] === "0" ? "1" : "0") + sig.slice(i + 1);
          break;
        }
        case "ts_shift":
          h["x-edgeweave-timestamp"] = String(Number(ts) + 1 + (c.n % 200));
          break;
        case "ts_far": {
          // Validly signed, but outside the 5-minute window (replay or clock games).
          const far = String(Number(ts) + (c.n % 2 ? 1 : -1) * (301 + (c.n % 1_000_000)));
          Object.assign(h, await signed(hook.secret, raw, far));
          break;
        }
        case "other_secret":
          Object.assign(h, await signed(`whsec_${c.n.toString(16)}`, raw, ts));
          break;
        case "no_sig":
          delete h["x-edgeweave-signature"];
          break;
        case "no_ts":
          delete h["x-edgeweave-timestamp"];
          break;
        case "sha1_prefix":
          h["x-edgeweave-signature"] = h["x-edgeweave-signature"]!.replace("sha256=", "sha1=");
          break;
        case "no_prefix":
          h["x-edgeweave-signature"] = h["x-edgeweave-signature"]!.slice("sha256=".length);
          break;
        case "body_only":
          h["x-edgeweave-signature"] = `sha256=${await hmacHex(hook.secret, raw + String(c.n))}`;
          break;
        case "no_dot":
          Object.assign(h, { "x-edgeweave-signature": await sign(hook.secret, ts.slice(0, -1), `${ts.slice(-1)}${raw}`) });
          break;
        case "trailing_newline":
          body = `${raw}\n`;
          break;
        case "two_sigs":
          h["x-edgeweave-signature"] = `sha256=${"0".repeat(64)}, ${h["x-edgeweave-signature"]}`;
          break;
        case "ts_format":
          // (Surrounding blanks are no test: the Headers API trims them before anyone sees them.)
          h["x-edgeweave-timestamp"] = [`-${ts}`, `+${ts}`, `${ts}.0`, `${ts}e0`, `0x${Number(ts).toString(16)}`, `${ts}0`][c.n % 6]!;
          break;
        case "truncated_sig":
          h["x-edgeweave-signature"] = h["x-edgeweave-signature"]!.slice(0, 7 + (c.n % 64));
          break;
        case "short_secret":
          Object.assign(h, await signed(String.fromCharCode(97 + (c.n % 26)), raw, ts));
          break;
      }
      const res = await deliver(hook, body, h);
      const text = await res.text();
      figures.forged_deliveries++;
      if (res.status === 202) figures.forged_accepted++;
      const code = res.status === 401 ? (JSON.parse(text) as { error: { code: string } }).error.code : "";
      if (
        res.status !== 401 ||
        !["BEM-090", "BEM-091"].includes(code) ||
        codedErrorProblem({ status: res.status, contentType: res.headers.get("content-type"), text })
      ) {
        problems.push(`${c.kind}/${c.n}: ${res.status} ${text.slice(0, 120)}`);
      }
    }
    expect(problems).toEqual([]);
    expect(await deliveryRows(hook.id)).toBe(0);
    await queueSettles();
    expect(await messagesOf(a, thread)).toEqual([]);
  });

  it("10 concurrent re-sent copies of one payload (fresh timestamp and signature each) and 5 concurrent bodies under one delivery id: one turn each", async () => {
    const hook = await registerHook(a);
    const t1 = `dup1-${mark}`;
    const raw = JSON.stringify({ t: t1, text: "only once please" });
    const copies = await Promise.all(Array.from({ length: 10 }, async (_, i) => deliver(hook, raw, await signed(hook.secret, raw, String(now() - i)))));
    const t2 = `dup2-${mark}`;
    const variants = await Promise.all(
      Array.from({ length: 5 }, async (_, i) => {
        const body = JSON.stringify({ t: t2, text: `variant ${i}` });
        return deliver(hook, body, { ...(await signed(hook.secret, body)), "x-edgeweave-delivery": `dup-${mark}` });
      }),
    );
    figures.duplicate_deliveries += 15;
    for (const r of [...copies, ...variants]) expect(r.status).toBe(202);
    expect(copies.filter((r) => r.headers.get("x-edgeweave-duplicate") === null)).toHaveLength(1);
    expect(variants.filter((r) => r.headers.get("x-edgeweave-duplicate") === null)).toHaveLength(1);
    await waitFor("both turns", async () => (await messagesOf(a, t1)).length >= 2 && (await messagesOf(a, t2)).length >= 2);
    await queueSettles();
    const m1 = await messagesOf(a, t1);
    const m2 = await messagesOf(a, t2);
    figures.duplicate_turns += m1.length / 2 - 1 + (m2.length / 2 - 1);
    expect(m1.map((m) => m.role)).toEqual(["user", "assistant"]);
    expect(m2.map((m) => m.role)).toEqual(["user", "assistant"]);
    expect(await deliveryRows(hook.id)).toBe(2);
  });

  it("a captured delivery replayed inside the window under a new X-Edgeweave-Delivery id runs no second turn", async () => {
    // The delivery header is not covered by the signature: an eavesdropper can replay the
    // exact signed bytes with any delivery id for 5 minutes.
    const hook = await registerHook(a);
    const thread = `replay-${mark}`;
    const raw = JSON.stringify({ t: thread, text: "transfer once" });
    const captured = { ...(await signed(hook.secret, raw)), "x-edgeweave-delivery": "original-1" };
    expect((await deliver(hook, raw, captured)).status).toBe(202);
    await waitFor("first turn", async () => (await messagesOf(a, thread)).length === 2);
    const replays = [await deliver(hook, raw, { ...captured, "x-edgeweave-delivery": "replayed-2" })];
    const { "x-edgeweave-delivery": _, ...withoutHeader } = captured;
    replays.push(await deliver(hook, raw, withoutHeader));
    await queueSettles();
    const turns = (await messagesOf(a, thread)).filter((m) => m.role === "user").length;
    figures.duplicate_turns += turns - 1;
    expect(turns, `replays answered ${replays.map((r) => r.status).join(", ")}`).toBe(1);
  });
});

describe("no key or secret in any log line or error body", () => {
  it("a run of many routes, failures included, logs none of them", async () => {
    const lines: string[] = [];
    for (const level of ["log", "info", "warn", "error", "debug", "trace"] as const) {
      vi.spyOn(console, level).mockImplementation((...args: unknown[]) => {
        lines.push(args.map((x) => (typeof x === "string" ? x : x instanceof Error ? `${x.message} ${x.stack}` : JSON.stringify(x))).join(" "));
      });
    }
    const bodies: string[] = [];
    const keep = async (r: Response | Promise<Response>) => bodies.push(await (await r).text());
    try {
      const hook = await registerHook(a, { callback_url: "https://callbacks.example.com/in" });
      // Down once (a retried failure gets logged), then refusing: the delivery ends within its task,
      // so no retry outlives this test (test files share one runtime; see vitest.config.ts).
      let callbackCalls = 0;
      mockUpstream("https://callbacks.example.com", () => new Response("down", { status: callbackCalls++ === 0 ? 500 : 400 }));
      // A provider that echoes the key it was sent in its error body (real providers do, partly).
      fakeOpenAI()
        .status(401, { body: { error: { message: "Incorrect API key provided: sk-test-openai", type: "invalid_request_error", code: "invalid_api_key" } } })
        .status(500, { body: { error: { message: "boom sk-test-openai" } } })
        .status(500, { body: { error: { message: "boom sk-test-openai" } } })
        .cut({ text: "cut", chunks: ["c", "ut"] })
        .otherwise("fine");
      const chat = (extra: Record<string, unknown>, key = a.adminKey) =>
        api("/v1/chat/completions", { key, body: { model: "gpt-4o-mini", thread_id: `logs-${mark}`, messages: [{ role: "user", content: "hi" }], ...extra } });
      await keep(chat({}));
      await keep(chat({}));
      await keep(chat({ stream: true }));
      await keep(chat({}));
      expectUnmockedRequests();
      await keep(chat({ model: "claude-sonnet-4" })); // unmocked host: a connection failure inside the run
      await keep(api("/v1/memory/facts", { key: a.memberKey, body: { scope: "organization:x", kind: "k", text: "t" } }));
      await keep(api("/v1/memory/facts?scope=system", { key: `${a.adminKey}x` }));
      await keep(api("/v1/admin/tenants", { key: `${OPERATOR_KEY}x` }));
      await keep(api("/v1/admin/tenants", { key: OPERATOR_KEY, body: "{bad" }));
      await keep(api(`/v1/admin/tenants/${a.tenant}/keys`, { key: OPERATOR_KEY }));
      await keep(api("/v1/webhooks", { key: a.adminKey }));
      const raw = JSON.stringify({ t: `logs-wh-${mark}`, text: "hello" });
      await keep(deliver(hook, raw, await signed(`${hook.secret}x`, raw)));
      await keep(deliver(hook, raw, await signed(hook.secret, raw, String(now() - 3600))));
      await keep(deliver(hook, "{bad", await signed(hook.secret, "{bad")));
      await keep(deliver(hook, raw, { ...(await signed(hook.secret, raw)), "x-edgeweave-delivery": `logs-${mark}` }));
      await keep(
        send("POST", "/v1/chat/completions", { key: a.adminKey, body: new Uint8Array([0x7b, 0xff]), contentType: "application/json" }).then(
          (r) => new Response(r.text),
        ),
      );
      // Let the queued run and its failing callback (retried, then refused) finish while we listen.
      await waitFor(
        "delivery finished",
        async () => {
          const row = await env.DB.prepare("SELECT status FROM webhook_deliveries WHERE webhook_id = ? AND delivery_id = ?")
            .bind(hook.id, `logs-${mark}`)
            .first<{ status: string }>();
          return row?.status === "done";
        },
        20_000,
      );
      await queueSettles();
      // A storage failure (the facts table gone for one turn): a coded 503 whose internals go to the log only.
      await env.DB.prepare("ALTER TABLE facts RENAME TO facts_gone").run();
      try {
        await keep(chat({ model: "auto" }, a.memberKey));
      } finally {
        await env.DB.prepare("ALTER TABLE facts_gone RENAME TO facts").run();
      }

      const secrets = [OPERATOR_KEY, a.adminKey, a.memberKey, b.adminKey, b.memberKey, hook.secret, hook.secret.slice(6, 30), ...PROVIDER_SECRETS];
      lines.push(...loggedLines()); // the worker's logger writes to the test capture
      const all = [...lines, ...bodies];
      figures.log_lines_checked += lines.length;
      const found = secrets.filter((s) => all.some((l) => l.includes(s)));
      figures.secrets_in_logs += found.length;
      expect(bodies).toHaveLength(17);
      expect(lines.some((l) => l.includes('"BEM-065"'))).toBe(true);
      expect(found).toEqual([]);
    } finally {
      vi.restoreAllMocks();
      clearUpstream();
    }
  }, 40_000);
});

afterAll(() => report("security", figures));
