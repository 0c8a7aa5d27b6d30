import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { encodeSpans, MAX_BATCH_SPANS, MAX_QUEUED_SPANS, otlpConfig, SpanExporter } from "../../src/core/otlp";
import { TurnTrace } from "../../src/core/trace";
import { receivedExports } from "../support/fake-otlp";
import { loggedRecords } from "../support/logs";

const withOtel = (
  vars: Partial<Record<"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" | "OTEL_EXPORTER_OTLP_HEADERS" | "OTEL_CAPTURE_CONTENT_TENANTS", string>>,
): Env => ({
  ...env,
  ...vars,
});
const otlpWarnings = () => loggedRecords().filter((r) => r.where === "otlp" && r.level === "warn");

describe("the exporter's configuration", () => {
  it("no endpoint: traces are off, silently (the default)", () => {
    expect(otlpConfig(withOtel({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "" }))).toBeUndefined();
    expect(otlpWarnings()).toEqual([]);
  });

  it("headers are URL-decoded name=value pairs; content tenants a comma-separated list", () => {
    const config = otlpConfig(
      withOtel({
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://cloud.langfuse.com/api/public/otel/v1/traces",
        OTEL_EXPORTER_OTLP_HEADERS: "Authorization=Basic%20cGs6c2s=, x-honeycomb-team=abc%2Cdef",
        OTEL_CAPTURE_CONTENT_TENANTS: " acme , ,globex",
      }),
    );
    expect(config?.headers).toEqual({ Authorization: "Basic cGs6c2s=", "x-honeycomb-team": "abc,def" });
    expect([...(config?.contentTenants ?? [])]).toEqual(["acme", "globex"]);
  });

  for (const [what, vars, message] of [
    ["an endpoint that is not a URL", { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "collector:4318" }, /ENDPOINT is not an http\(s\) URL/],
    [
      "a header without a value",
      { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://c.test/v1/traces", OTEL_EXPORTER_OTLP_HEADERS: "Authorization" },
      /HEADERS .*entry 1 is not name=value/,
    ],
    [
      "a header badly URL-encoded",
      { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://c.test/v1/traces", OTEL_EXPORTER_OTLP_HEADERS: "a=b,c=%E0%A4%A" },
      /HEADERS .*entry 2 is not URL-encoded/,
    ],
  ] as const) {
    it(`${what}: traces are off and a warning says why`, () => {
      expect(otlpConfig(withOtel(vars))).toBeUndefined();
      expect(otlpWarnings().map((r) => r.message)).toEqual([expect.stringMatching(message)]);
    });
  }
});

describe("OTLP's JSON encoding", () => {
  it("ids in hex, times in nanoseconds, typed attribute values, an error status only on failure", () => {
    const trace = new TurnTrace(false);
    const root = trace.child("invoke_agent a", "internal", { s: "x", i: 3, d: 0.25, b: true, list: ["p", "q"], gone: undefined });
    root.child("chat m", "client").fail("BEM-075", "Every routed candidate failed").end();
    root.end();
    const [chat, agent] = encodeSpans(trace.spans).resourceSpans[0]!.scopeSpans[0]!.spans;
    expect(agent).toMatchObject({ traceId: trace.traceId, spanId: expect.stringMatching(/^[0-9a-f]{16}$/), kind: 1, status: {} });
    expect(agent).not.toHaveProperty("parentSpanId");
    expect(agent!.startTimeUnixNano).toMatch(/^\d{19}$/);
    expect(agent!.attributes).toEqual([
      { key: "s", value: { stringValue: "x" } },
      { key: "i", value: { intValue: "3" } },
      { key: "d", value: { doubleValue: 0.25 } },
      { key: "b", value: { boolValue: true } },
      { key: "list", value: { arrayValue: { values: [{ stringValue: "p" }, { stringValue: "q" }] } } },
    ]);
    expect(chat).toMatchObject({ parentSpanId: agent!.spanId, kind: 3, status: { code: 2, message: "Every routed candidate failed" } });
    expect(chat!.attributes).toContainEqual({ key: "error.type", value: { stringValue: "BEM-075" } });
  });
});

describe("batching", () => {
  const config = () => otlpConfig(env)!;
  const spansOf = (n: number, tenant: string) => {
    const trace = new TurnTrace(false);
    for (let i = 0; i < n; i++) trace.child(`s${i}`, "internal", { "edgeweave.tenant.id": tenant }).end();
    return trace.spans;
  };
  const sizesFor = (tenant: string) =>
    receivedExports()
      .filter((e) => e.spans.some((s) => s.attributes["edgeweave.tenant.id"] === tenant))
      .map((e) => e.spans.length);

  it("what arrives while a send is in flight leaves together in the next request", async () => {
    const tenant = `t-batch-${crypto.randomUUID().slice(0, 8)}`;
    const kept: Promise<unknown>[] = [];
    const exporter = new SpanExporter(config(), (p) => kept.push(p));
    exporter.add(spansOf(2, tenant));
    exporter.add(spansOf(3, tenant));
    exporter.add(spansOf(4, tenant));
    // One send under way at a time, kept once: the later turns' spans share one request.
    expect(kept).toHaveLength(1);
    await Promise.all(kept);
    expect(sizesFor(tenant)).toEqual([2, 7]);
  });

  it("the queue is bounded: spans past it are dropped and counted, the rest sent in batches", async () => {
    const tenant = `t-bound-${crypto.randomUUID().slice(0, 8)}`;
    const kept: Promise<unknown>[] = [];
    const exporter = new SpanExporter(config(), (p) => kept.push(p));
    exporter.add(spansOf(MAX_QUEUED_SPANS + 100, tenant));
    await Promise.all(kept);
    const sizes = sizesFor(tenant);
    expect(sizes.every((n) => n <= MAX_BATCH_SPANS)).toBe(true);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(MAX_QUEUED_SPANS);
    expect(otlpWarnings().map((r) => r.message)).toEqual(["100 span(s) dropped: queue full"]);
  });
});
