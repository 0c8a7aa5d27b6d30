import { describe, expect, it } from "vitest";
import { fakeOpenAI } from "../support/fake-openai";
import { uniqueThread } from "../support/runs";
import { api, createKey, createTenant, type TestTenant } from "../support/tenants";
import { waitFor } from "../webhooks/helpers";

/**
 * Issue 35, "the cap holds": 200 concurrent turns of every kind (plain, streamed, failing over, a tool
 * loop) at a budget with room for about 20. While they run, what is spent and held never passes the cap;
 * afterwards the settled spend equals, to the micro-USD, what the tenant's usage rows bill for turns.
 */
type Standing = { spent_usd: number; reserved_usd: number; limit_usd: number; resets_at: string | null };
const micro = (usd: number) => Math.round(usd * 1_000_000);

const path = (t: TestTenant) => `/v1/admin/tenants/${t.tenant}/budgets`;
async function makeBudget(t: TestTenant, body: Record<string, unknown>): Promise<string> {
  const res = await api(path(t), { key: t.adminKey, body });
  expect(res.status).toBe(201);
  return ((await res.json()) as { id: string }).id;
}
async function standing(t: TestTenant, id: string): Promise<Standing> {
  const res = await api(`${path(t)}/${id}`, { key: t.adminKey });
  expect(res.status).toBe(200);
  return (await res.json()) as Standing;
}
const settled = (t: TestTenant, id: string) =>
  waitFor("settled", async () => ((await standing(t, id)).reserved_usd === 0 ? standing(t, id) : undefined), 60_000);

/** What the tenant's usage rows bill for turns (written after each answer): waits until they stop changing. */
async function billedTurns(key: string): Promise<number> {
  let last = -1;
  return waitFor(
    "usage rows",
    async () => {
      const u = (await (await api("/v1/usage", { key })).json()) as { data: { cause: string; cost: number }[] };
      const now = micro(u.data.filter((r) => r.cause === "turn").reduce((s, r) => s + r.cost, 0));
      const stable = now === last;
      last = now;
      await new Promise((r) => setTimeout(r, 200));
      return stable ? now : undefined;
    },
    60_000,
  );
}

// Each call reports 10 prompt + 100 completion tokens: gpt-4o-mini $0.15/$0.60 per million = 62 micro-USD,
// gpt-4o (failover) $2.50/$10 = 1,025. max_tokens 100 keeps each reservation near its call's real cost.
const USAGE = { prompt_tokens: 10, completion_tokens: 100 };
type Wire = { model: string; messages: { role: string; content: unknown }[]; tools?: { function: { name: string } }[] };
/** One upstream for every kind of turn at once: mini fails a "failover" prompt (so gpt-4o answers), the planner calls a tool once. */
function upstream(wait: () => Promise<unknown> = async () => undefined) {
  return fakeOpenAI().otherwiseBy(async (raw) => {
    await wait();
    const body = raw as Wire;
    if (body.model === "gpt-4o-mini" && JSON.stringify(body.messages).includes("please failover")) return 500;
    const planning = body.tools?.some((t) => t.function.name === "write_todos") && !body.messages.some((m) => m.role === "tool");
    if (planning) return { tool_calls: [{ name: "write_todos", arguments: { todos: [{ content: "plan", status: "pending" }] } }], usage: USAGE };
    return { text: "ok", usage: USAGE };
  });
}

const base = { model: "gpt-4o-mini", max_tokens: 100 };
/** Turns answered so far (refused or done), over the file. */
let answered = 0;
/** The i-th turn: plain, streamed, failing over, or a two-step tool loop on a thread. */
function turn(key: string, i: number): Promise<Response> {
  const say = (content: string) => [{ role: "user", content }];
  const kinds = [
    { ...base, messages: say("hi") },
    { ...base, stream: true, messages: say("hi") },
    { ...base, model: "auto", capabilities: ["json"], messages: say("please failover") },
    { ...base, agent: "planner", context: { user_name: "Ada" }, thread_id: uniqueThread("load"), messages: say("plan") },
  ];
  return api("/v1/chat/completions", { key, body: kinds[i % kinds.length] }).then(async (res) => {
    await res.text(); // a stream's status is known before its end: read it all, so its settle has happened
    answered++;
    return res;
  });
}

/** Fires `n` turns at once over `keys`, sampling the budget while they run: spent + held never passes the cap. */
async function storm(t: TestTenant, budget: string, keys: string[], n: number): Promise<{ statuses: number[]; peak: number }> {
  let running = true;
  let peak = 0;
  const sampler = (async () => {
    while (running) {
      const s = await standing(t, budget);
      peak = Math.max(peak, micro(s.spent_usd + s.reserved_usd));
      expect(micro(s.spent_usd + s.reserved_usd)).toBeLessThanOrEqual(micro(s.limit_usd));
      await new Promise((r) => setTimeout(r, 50)); // within the admin API's request quota
    }
  })();
  const answers = await Promise.all(Array.from({ length: n }, (_, i) => turn(keys[i % keys.length]!, i)));
  running = false;
  await sampler;
  return { statuses: answers.map((r) => r.status), peak };
}

// The most one call here may reserve: a failover to gpt-4o at max_tokens 100 plus its prompt, with margin.
const ONE_RESERVATION = 1_100;
/** Room for about 20 of the turns below (62 to 1,025 micro-USD each, by kind). */
const LIMIT = 6_400;

describe("the cap holds: 200 concurrent turns of every kind", () => {
  /** 200 turns over `keys` at a budget with room for about 20: none fails otherwise, and the spend is exactly what was billed. */
  async function capHolds(t: TestTenant, id: string, keys: string[]) {
    upstream();
    const { statuses, peak } = await storm(t, id, keys, 200);
    expect(statuses.filter((s) => s !== 200 && s !== 402)).toEqual([]);
    const ok = statuses.filter((s) => s === 200).length;
    expect(ok).toBeGreaterThanOrEqual(5);
    expect(ok).toBeLessThan(100);
    expect(peak).toBeGreaterThan(0);
    const spent = micro((await settled(t, id)).spent_usd);
    expect(spent).toBeLessThanOrEqual(LIMIT + ONE_RESERVATION);
    expect(spent).toBe(await billedTurns(keys[0]!));
  }

  it("a key budget with room for about 20 turns: spend stays within the cap, and equals the billed usage rows exactly", async () => {
    const t = await createTenant();
    const key = await createKey(t.tenant, { role: "admin" });
    await capHolds(t, await makeBudget(t, { kind: "key", target: key.id, limit_usd: LIMIT / 1e6 }), [key.key]);
  }, 120_000);

  it("a tenant budget shared by three keys: the same, counted once for all of them", async () => {
    const t = await createTenant();
    const [b, c] = await Promise.all([createKey(t.tenant, { role: "admin" }), createKey(t.tenant, { role: "admin" })]);
    await capHolds(t, await makeBudget(t, { kind: "tenant", limit_usd: LIMIT / 1e6 }), [t.adminKey, b.key, c.key]);
  }, 120_000);

  it("across a window reset: calls held in the old window are charged to it, the new one starts empty, and the two add up to the usage rows", async () => {
    const t = await createTenant();
    const key = await createKey(t.tenant, { role: "admin" });
    // The current day window ends in about 8 seconds.
    const anchor = new Date(Date.now() - 86_400_000 + 8_000).toISOString();
    const id = await makeBudget(t, { kind: "key", target: key.id, limit_usd: LIMIT / 1e6, window: "day", anchor });
    const resetsAt = Date.parse((await standing(t, id)).resets_at!);
    // The first 100 turns all reserve before the reset, and their calls hang until it has passed: their holds straddle it.
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    let waiting = 0;
    upstream(async () => {
      if (Date.now() >= resetsAt) return;
      waiting++;
      await gate;
    });
    const from = answered;
    const first = storm(t, id, [key.key], 100);
    // Every turn is either refused or held at the provider: the old window holds its reservations.
    await waitFor("the first turns in", async () => (answered - from + waiting === 100 ? true : undefined), resetsAt - Date.now() - 500);
    const old = await standing(t, id);
    expect(micro(old.spent_usd + old.reserved_usd)).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, Math.max(0, resetsAt - Date.now()) + 100));
    // The new window: nothing spent, nothing held, though the old window's calls are still in flight.
    const fresh = await standing(t, id);
    expect(Date.parse(fresh.resets_at!)).toBe(resetsAt + 86_400_000);
    expect([fresh.spent_usd, fresh.reserved_usd]).toEqual([0, 0]);
    release();
    const before = (await first).statuses.filter((s) => s === 200).length;
    expect(before).toBeGreaterThan(0);
    const after = await storm(t, id, [key.key], 100);
    expect(after.statuses.filter((s) => s === 200).length).toBeGreaterThan(0);
    const spentNew = micro((await settled(t, id)).spent_usd);
    expect(spentNew).toBeLessThanOrEqual(LIMIT + ONE_RESERVATION);
    // The old window's settles did not leak into the new one: the new holds only its own calls' cost.
    const total = await billedTurns(key.key);
    expect(total - spentNew).toBeGreaterThan(0);
    expect(total - spentNew).toBeLessThanOrEqual(LIMIT + ONE_RESERVATION);
  }, 120_000);
});
