import { describe, expect, it } from "vitest";
import { checkpointPut } from "../support/checkpoint-put";
import { api, createTenant } from "../support/tenants";

/**
 * A graph's DeltaChannel channels are named in a checkpoint's metadata (`counters_since_delta_snapshot`,
 * which a prune reads to keep their history) and in the reads' `delta_channels` / `channels`: at most 64
 * channels, each name at most MAX_CHANNEL_NAME (4,096) characters, like every other channel name.
 * Before, the metadata's entries were unbounded (a prune walked every one of them) and a read's names
 * were bounded only by its body.
 */
const b64 = (o: unknown) => btoa(JSON.stringify(o));
const batch = (key: string, thread: string, ops: unknown[]) => api(`/v1/langgraph/threads/${thread}/batch`, { key, body: { ops } });
const errorOf = async (res: Response) => ((await res.json()) as { error: { code: string; message: string } }).error;
const withCounters = (id: string, counters: Record<string, unknown>) => ({
  ...checkpointPut(),
  id,
  metadata: { t: "json", b: b64({ source: "loop", step: 1, counters_since_delta_snapshot: counters }) },
});
const counters = (n: number, name = (i: number) => `ch${i}`) => Object.fromEntries(Array.from({ length: n }, (_, i) => [name(i), [1, 1]]));

describe("LangGraph delta channels are bounded", () => {
  it("a put whose metadata names more than 64 delta channels, or one longer than 4,096 characters, is 400 BEM-148 and the batch stores nothing", async () => {
    const t = await createTenant();
    const thread = `dl-${crypto.randomUUID().slice(0, 8)}`;
    for (const meta of [counters(65), { ["x".repeat(4097)]: [1, 1] }]) {
      const res = await batch(t.adminKey, thread, [{ ...checkpointPut(), id: "1ef-0001" }, withCounters("1ef-0002", meta)]);
      expect(res.status).toBe(400);
      const error = await errorOf(res);
      expect(error.code).toBe("BEM-148");
      expect(error.message).toContain("1ef-0002");
    }
    const listed = (await (await api(`/v1/langgraph/threads/${thread}/list`, { key: t.adminKey, body: {} })).json()) as { tuples: unknown[] };
    expect(listed.tuples).toEqual([]);
    // At the bounds it goes in (64 channels of 4,096 characters).
    const res = await batch(t.adminKey, thread, [
      withCounters(
        "1ef-0003",
        counters(64, (i) => `${i}`.padEnd(4096, "x")),
      ),
    ]);
    expect(res.status).toBe(200);
  });

  it("a read's delta channel longer than 4,096 characters is 400 BEM-011 naming the bound (get, delta-history, prune)", async () => {
    const t = await createTenant();
    const thread = `dl-${crypto.randomUUID().slice(0, 8)}`;
    expect((await batch(t.adminKey, thread, [{ ...checkpointPut(), id: "1ef-0001" }])).status).toBe(200);
    const long = "x".repeat(4097);
    for (const [route, body] of [
      ["get", { delta_channels: [long] }],
      ["delta-history", { channels: [long] }],
      ["prune", { keep_last: 1, delta_channels: [long] }],
    ] as const) {
      const res = await api(`/v1/langgraph/threads/${thread}/${route}`, { key: t.adminKey, body });
      expect(res.status, route).toBe(400);
      const error = await errorOf(res);
      expect(error.code).toBe("BEM-011");
      expect(error.message).toContain("MAX_CHANNEL_NAME");
    }
    // At the bound: served.
    expect((await api(`/v1/langgraph/threads/${thread}/get`, { key: t.adminKey, body: { delta_channels: ["x".repeat(4096)] } })).status).toBe(200);
  });
});
