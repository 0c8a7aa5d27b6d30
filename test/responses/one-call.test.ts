import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { fakeOpenAI } from "../support/fake-openai";
import { api } from "../support/tenants";
import { tenantForRuns } from "../support/runs";

/**
 * A stored Responses turn is one call into its thread's object: the record is written by the
 * run's own save, in the transaction of its checkpoint, not by a second call after the answer.
 * Counted on the namespace's prototype (the Worker and this test share one isolate).
 */
const tenant = tenantForRuns();
afterEach(() => vi.restoreAllMocks());

type Created = { id: string; instructions: string | null; output: unknown[]; edgeweave: { thread_id: string; checkpoint_id: string } };

describe("a stored Responses turn", () => {
  it("reaches its thread's object once, and the record it stored is the answer (instructions aside)", async () => {
    fakeOpenAI().reply("Hello Eve!").reply("Still Eve.");
    const { adminKey: key } = tenant();
    const ns = Object.getPrototypeOf(env.THREADS) as DurableObjectNamespace;
    const get = vi.spyOn(ns, "get");
    const res = await api("/v1/responses", { key, body: { model: "gpt-4o-mini", input: "Hi, I am Eve.", instructions: "Be brief." } });
    expect(res.status).toBe(200);
    const created = (await res.json()) as Created;
    expect(get).toHaveBeenCalledTimes(1);
    get.mockRestore();

    const read = await api(`/v1/responses/${created.id}`, { key });
    expect(await read.json()).toEqual({ ...created, instructions: null });

    // Chained and streamed: still one call, and the stream's final Response is the stored one.
    const chained = vi.spyOn(ns, "get");
    const stream = await api("/v1/responses", { key, body: { model: "gpt-4o-mini", input: "Who?", previous_response_id: created.id, stream: true } });
    const events = (await stream.text()).split("\n").filter((l) => l.startsWith("data: "));
    const done = JSON.parse(events.at(-1)!.slice(6)) as { type: string; response: Created };
    expect(done.type).toBe("response.completed");
    expect(chained).toHaveBeenCalledTimes(1);
    chained.mockRestore();
    expect(await (await api(`/v1/responses/${done.response.id}`, { key })).json()).toEqual({ ...done.response, instructions: null });
  });
});
