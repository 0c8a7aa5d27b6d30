import { env } from "cloudflare:workers";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { callModel, streamModel } from "../../src/providers/call";
import { type Attempt, FailoverError, openStreamWithFailover, runWithFailover } from "../../src/providers/failover";
import { ProviderError } from "../../src/providers/provider-error";
import type { ChatRequest, StreamEvent } from "../../src/providers/types";
import { fakeAnthropic } from "../support/fake-anthropic";
import { fakeOpenAI } from "../support/fake-openai";
import { clearUpstream } from "../support/upstream";
import { drain, failure, model, portable } from "./helpers";

afterEach(() => clearUpstream());

const req: ChatRequest = { messages: [{ role: "user", content: "Hi" }] };
const gpt = model("gpt", "openai", { timeout_ms: 100 });
const claude = model("claude", "anthropic", { model: "claude-haiku-4-5", timeout_ms: 100 });
const call = (m: typeof gpt) => callModel(m, req, { env });

/** Records the waits asked for instead of waiting. */
function sleeper() {
  const waits: number[] = [];
  return { waits, sleep: async (ms: number) => void waits.push(ms) };
}

describe("failover across providers (through the fake wire formats)", () => {
  it("500 twice → retries once with backoff, then the next candidate answers", async () => {
    const openai = fakeOpenAI().status(500).status(502);
    const anthropic = fakeAnthropic().reply("From Claude");
    const { waits, sleep } = sleeper();
    const r = await runWithFailover([gpt, claude], call, { sleep, baseDelayMs: 100, random: () => 0 });
    expect(r.value.message.content).toBe("From Claude");
    expect(r.model.name).toBe("claude");
    expect(r.attempts).toEqual<Attempt[]>([
      { model: "gpt", outcome: "retry", status: 500, error_code: "BEM-071", delay_ms: 100 },
      { model: "gpt", outcome: "failover", status: 502, error_code: "BEM-071" },
      { model: "claude", outcome: "ok" },
    ]);
    expect(waits).toEqual([100]);
    expect(openai.calls).toHaveLength(2);
    expect(anthropic.calls).toHaveLength(1);
  });

  it("429 with retry-after (seconds) is honoured: waits what was asked, then the same model answers", async () => {
    fakeOpenAI().status(429, { retryAfter: "1" }).reply("after the wait");
    const anthropic = fakeAnthropic();
    const { waits, sleep } = sleeper();
    const r = await runWithFailover([gpt, claude], call, { sleep });
    expect(r.value.message.content).toBe("after the wait");
    expect(waits).toEqual([1000]);
    expect(r.attempts).toEqual([
      { model: "gpt", outcome: "retry", status: 429, error_code: "BEM-078", delay_ms: 1000 },
      { model: "gpt", outcome: "ok" },
    ]);
    expect(anthropic.calls).toHaveLength(0);
  });

  it("429 with retry-after as an HTTP date is honoured too", async () => {
    const at = new Date(Date.now() + 1500).toUTCString();
    fakeOpenAI().status(429, { retryAfter: at }).reply("ok");
    const { waits, sleep } = sleeper();
    await runWithFailover([gpt], call, { sleep });
    expect(waits).toHaveLength(1);
    // HTTP dates have 1 s resolution.
    expect(waits[0]).toBeGreaterThan(400);
    expect(waits[0]).toBeLessThanOrEqual(1500);
  });

  it("a retry-after beyond maxDelayMs is not waited for: the next candidate is tried at once", async () => {
    fakeOpenAI().status(429, { retryAfter: "30" });
    fakeAnthropic().reply("Claude, no waiting");
    const { waits, sleep } = sleeper();
    const r = await runWithFailover([gpt, claude], call, { sleep, maxDelayMs: 2000 });
    expect(r.value.message.content).toBe("Claude, no waiting");
    expect(waits).toEqual([]);
    expect(r.attempts[0]).toEqual({ model: "gpt", outcome: "failover", status: 429, error_code: "BEM-078" });
  });

  it("every candidate rate limited → BEM-076 (429) with a Retry-After for the client", async () => {
    fakeOpenAI().status(429, { retryAfter: "20" });
    fakeAnthropic().status(429, { retryAfter: "5" });
    const err = await failure(runWithFailover([gpt, claude], call, { sleep: async () => {} }));
    expect(err).toBeInstanceOf(FailoverError);
    expect(err).toMatchObject({ code: "BEM-076", status: 429, headers: { "retry-after": "5" } });
    expect((err as FailoverError).attempts.map((a) => a.outcome)).toEqual(["failover", "failover"]);
  });

  it("a timeout fails over to the next candidate without retrying the slow one", async () => {
    const openai = fakeOpenAI().hang();
    fakeAnthropic().reply("Claude was quick");
    const r = await runWithFailover([gpt, claude], call, { sleep: async () => {} });
    expect(r.value.message.content).toBe("Claude was quick");
    expect(r.attempts[0]).toEqual({ model: "gpt", outcome: "failover", error_code: "BEM-072" });
    expect(openai.calls).toHaveLength(1);
  });

  it("every candidate timing out → BEM-072 (504)", async () => {
    fakeOpenAI().hang();
    fakeAnthropic().hang();
    const err = await failure(runWithFailover([gpt, claude], call));
    expect(err).toMatchObject({ code: "BEM-072", status: 504 });
  });

  it("401 upstream → no retry, no failover: BEM-073 (424) with the attempt attached", async () => {
    fakeOpenAI().status(401);
    const anthropic = fakeAnthropic().reply("never");
    const err = await failure(runWithFailover([gpt, claude], call, { sleep: async () => {} }));
    expect(err).toBeInstanceOf(FailoverError);
    expect(err).toMatchObject({ code: "BEM-073", status: 424, message: "Model 'gpt': upstream rejected the request (HTTP 401)" });
    expect((err as FailoverError).attempts).toEqual([{ model: "gpt", outcome: "fatal", status: 401, error_code: "BEM-073" }]);
    expect(anthropic.calls).toHaveLength(0);
  });

  it("a missing key skips that candidate (recorded as BEM-070) and the next answers", async () => {
    fakeAnthropic().reply("Claude has a key");
    const r = await runWithFailover([model("gpt", "openai", { api_key_env: "UNSET_KEY" }), claude], call);
    expect(r.attempts[0]).toEqual({ model: "gpt", outcome: "failover", error_code: "BEM-070" });
    expect(r.model.name).toBe("claude");
  });

  it("mixed failures on every candidate → BEM-075 naming each model and status", async () => {
    fakeOpenAI().status(500).status(500);
    fakeAnthropic().hang();
    const err = await failure(runWithFailover([gpt, claude], call, { sleep: async () => {} }));
    expect(err).toMatchObject({ code: "BEM-075", status: 502 });
    expect((err as Error).message).toContain("Model 'gpt': upstream error (HTTP 500)");
    expect((err as Error).message).toContain("Model 'claude': upstream timed out");
  });
});

describe("stream failover happens only before the first event", () => {
  const open = (m: typeof gpt) => streamModel(m, req, { env });

  it("a 500 before the stream starts fails over; the chosen stream is complete", async () => {
    fakeOpenAI().status(500).status(500);
    fakeAnthropic().reply({ text: "Streamed by Claude", chunks: ["Streamed ", "by Claude"] });
    const r = await openStreamWithFailover([gpt, claude], open, { sleep: async () => {} });
    expect(r.model.name).toBe("claude");
    const events = portable(await drain(r.value));
    expect(events.map((e) => (e.type === "delta" ? e.content : e.type))).toEqual(["Streamed ", "by Claude", "done"]);
  });

  it("a stream cut before its first event fails over", async () => {
    fakeOpenAI().cut({ text: "" }).cut({ text: "" });
    fakeAnthropic().reply("fine");
    const r = await openStreamWithFailover([gpt, claude], open, { sleep: async () => {} });
    expect(r.attempts.map((a) => [a.model, a.outcome, a.error_code])).toEqual([
      ["gpt", "retry", "BEM-074"],
      ["gpt", "failover", "BEM-074"],
      ["claude", "ok", undefined],
    ]);
  });

  it("a stream cut after its first event is an error to the consumer (BEM-074), with no failover", async () => {
    fakeOpenAI().cut({ text: "Half of it", chunks: ["Half ", "of it"] });
    const anthropic = fakeAnthropic().reply("never");
    const r = await openStreamWithFailover([gpt, claude], open);
    const seen: StreamEvent[] = [];
    const err = await failure(
      (async () => {
        for await (const ev of r.value) seen.push(ev);
      })(),
    );
    expect(seen).toEqual([
      { type: "delta", content: "Half " },
      { type: "delta", content: "of it" },
    ]);
    expect(err).toBeInstanceOf(ProviderError);
    expect(err).toMatchObject({ code: "BEM-074", status: 502 });
    expect(anthropic.calls).toHaveLength(0);
  });

  it("401 on a stream → BEM-073, no failover", async () => {
    fakeOpenAI().status(401);
    const anthropic = fakeAnthropic();
    const err = await failure(openStreamWithFailover([gpt, claude], open));
    expect(err).toMatchObject({ code: "BEM-073", status: 424 });
    expect(anthropic.calls).toHaveLength(0);
  });
});

describe("runWithFailover rules (property)", () => {
  const retryable = (status: number) => new ProviderError("BEM-071", `HTTP ${status}`, { disposition: "retry", upstreamStatus: status });
  const models = ["a", "b", "c"].map((n) => model(n, "custom", { base_url: "http://x.test" }));

  it("tries each model at most 1 + maxRetries times, in order, and stops at the first success", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.boolean(), { minLength: 1, maxLength: 12 }), fc.integer({ min: 0, max: 3 }), async (script, maxRetries) => {
        let i = 0;
        const tried: string[] = [];
        const attempt = async (m: (typeof models)[number]) => {
          tried.push(m.name);
          const ok = script[i++ % script.length];
          if (!ok) throw retryable(503);
          return m.name;
        };
        const { waits, sleep } = sleeper();
        const result = await runWithFailover(models, attempt, { maxRetriesPerModel: maxRetries, sleep, baseDelayMs: 10, maxDelayMs: 50 }).catch(
          (e: unknown) => e,
        );
        const perModel = new Map<string, number>();
        for (const n of tried) perModel.set(n, (perModel.get(n) ?? 0) + 1);
        for (const count of perModel.values()) expect(count).toBeLessThanOrEqual(1 + maxRetries);
        expect([...tried].sort()).toEqual(tried); // never goes back to an earlier model
        for (const w of waits) expect(w).toBeLessThanOrEqual(50);
        if (result instanceof FailoverError) {
          expect(result.code).toBe("BEM-075");
          expect(tried).toHaveLength(models.length * (1 + maxRetries));
        } else {
          expect(result).toMatchObject({ value: tried.at(-1) });
          expect((result as { attempts: Attempt[] }).attempts.at(-1)?.outcome).toBe("ok");
        }
      }),
      { numRuns: 100 },
    );
  });

  it("a non-provider error (a bug) is never retried and is rethrown as-is", async () => {
    let calls = 0;
    const boom = new TypeError("bug");
    const err = await failure(
      runWithFailover(models, async () => {
        calls++;
        throw boom;
      }),
    );
    expect(err).toBe(boom);
    expect(calls).toBe(1);
  });
});
