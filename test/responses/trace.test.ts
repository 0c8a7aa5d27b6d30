import { describe, expect, it } from "vitest";
import { fakeOpenAI } from "../support/fake-openai";
import { api } from "../support/tenants";
import { readSse, tenantForRuns } from "../support/runs";

/**
 * `X-Edgeweave-Trace: full` (or the body's `"trace": "full"`) asks a run for the whole routing
 * trace; chat and invoke honoured it and Responses ignored it (the header was dropped, the body
 * field unknown). The trace is in the creating call's answer and its stream, never in what is stored.
 */
const tenant = tenantForRuns();
const STRATEGIES = ["availability", "modality", "capability", "context_window", "cost_aware", "fallback"];
type Routing = { model: string; candidate_count: number; candidates?: string[]; trace?: { strategy: string }[] };
type Made = { id: string; edgeweave: { routing: Routing } };

const create = (body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  api("/v1/responses", { key: tenant().adminKey, headers, body: { model: "auto", input: "Hi", ...body } });

describe("Responses honour the trace level as chat and invoke do", () => {
  it("X-Edgeweave-Trace: full adds the failover order and every step to the answer; the stored response keeps the summary", async () => {
    fakeOpenAI().reply("Hello.");
    const res = await create({}, { "x-edgeweave-trace": "full" });
    expect(res.status).toBe(200);
    const made = (await res.json()) as Made;
    expect(made.edgeweave.routing.candidates?.[0]).toBe(made.edgeweave.routing.model);
    expect(made.edgeweave.routing.candidates).toHaveLength(made.edgeweave.routing.candidate_count);
    expect(made.edgeweave.routing.trace?.map((t) => t.strategy)).toEqual(STRATEGIES);

    const stored = (await (await api(`/v1/responses/${made.id}`, { key: tenant().adminKey })).json()) as Made;
    expect(Object.keys(stored.edgeweave.routing).sort()).toEqual(["attempts", "candidate_count", "model", "reason"]);
  });

  it('"trace": "full" in the body does the same, with store: false and in response.completed', async () => {
    fakeOpenAI().reply("One.").reply("Two.");
    const unstored = (await (await create({ trace: "full", store: false })).json()) as Made;
    expect(unstored.edgeweave.routing.trace?.map((t) => t.strategy)).toEqual(STRATEGIES);

    const events = await readSse(await create({ stream: true }, { "x-edgeweave-trace": "full" }));
    const completed = JSON.parse(events.find((e) => e.event === "response.completed")!.data) as { response: Made };
    expect(completed.response.edgeweave.routing.trace?.map((t) => t.strategy)).toEqual(STRATEGIES);
  });

  it("by default the summary only; an unknown level is a coded 400", async () => {
    fakeOpenAI().reply("Plain.");
    const plain = (await (await create({})).json()) as Made;
    expect(plain.edgeweave.routing.trace).toBeUndefined();
    const bad = await create({}, { "x-edgeweave-trace": "everything" });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { code: string } }).error.code).toBe("BEM-011");
  });
});
