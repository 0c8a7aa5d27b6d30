import { z } from "zod";
import { standingUpstream } from "./upstream";

/**
 * An OTLP/HTTP collector at the far side of the network (vitest.config.ts points every turn's
 * export at it). Each request is decoded against OTLP's JSON encoding of ExportTraceServiceRequest
 * (strict: an unknown field or a wrong type is a malformed export, kept as such), so a test reads
 * the spans as a collector would. A test makes the collector fail for its own tenant only.
 */

type Value = string | number | boolean | Value[];
const AnyValue: z.ZodType<
  { stringValue: string } | { intValue: string } | { doubleValue: number } | { boolValue: boolean } | { arrayValue: { values: unknown[] } }
> = z.lazy(() =>
  z.union([
    z.strictObject({ stringValue: z.string() }),
    z.strictObject({ intValue: z.string().regex(/^-?\d+$/) }),
    z.strictObject({ doubleValue: z.number() }),
    z.strictObject({ boolValue: z.boolean() }),
    z.strictObject({ arrayValue: z.strictObject({ values: z.array(AnyValue) }) }),
  ]),
);
const KeyValue = z.strictObject({ key: z.string().min(1), value: AnyValue });
const Nanos = z.string().regex(/^\d{19}$/);
const SpanJson = z.strictObject({
  traceId: z.string().regex(/^[0-9a-f]{32}$/),
  spanId: z.string().regex(/^[0-9a-f]{16}$/),
  parentSpanId: z
    .string()
    .regex(/^[0-9a-f]{16}$/)
    .optional(),
  name: z.string().min(1),
  kind: z.union([z.literal(1), z.literal(2), z.literal(3), z.literal(4), z.literal(5)]),
  startTimeUnixNano: Nanos,
  endTimeUnixNano: Nanos,
  attributes: z.array(KeyValue),
  status: z.strictObject({ code: z.literal(2).optional(), message: z.string().optional() }),
});
const ExportRequest = z.strictObject({
  resourceSpans: z.array(
    z.strictObject({
      resource: z.strictObject({ attributes: z.array(KeyValue) }),
      scopeSpans: z.array(z.strictObject({ scope: z.strictObject({ name: z.string() }), spans: z.array(SpanJson) })),
    }),
  ),
});

export type ReceivedSpan = {
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  name: string;
  kind: "internal" | "client" | "other";
  startNs: bigint;
  endNs: bigint;
  attributes: Record<string, Value>;
  error: string | undefined;
  service: Value | undefined;
};

type Wire = z.infer<typeof AnyValue>;
function decodeValue(v: Wire): Value {
  if ("stringValue" in v) return v.stringValue;
  if ("intValue" in v) return Number(v.intValue);
  if ("doubleValue" in v) return v.doubleValue;
  if ("boolValue" in v) return v.boolValue;
  return v.arrayValue.values.map((x) => decodeValue(x as Wire));
}
const attributesOf = (kvs: z.infer<typeof KeyValue>[]) => Object.fromEntries(kvs.map((kv) => [kv.key, decodeValue(kv.value)]));

/** What the collector was sent: each request's headers and spans, or why it was not a valid export. */
export type Export = { authorization: string | null; contentType: string | null; spans: ReceivedSpan[]; malformed?: string };
const exported: Export[] = [];

/** How the collector treats a tenant's exports: refuse (503), down (the connection fails), hold (until released). */
type Failure = "refuse" | "down" | "hold";
const failing = new Map<string, Failure>();
/** Exports being held, by tenant. A hold polls its flag: the request's own context must settle it (a Durable Object's I/O cannot be resolved from the test's). */
const holding = new Map<string, number>();

function decode(req: Request, body: unknown): Export {
  const base = { authorization: req.headers.get("authorization"), contentType: req.headers.get("content-type") };
  const parsed = ExportRequest.safeParse(body);
  if (!parsed.success) return { ...base, spans: [], malformed: parsed.error.message };
  const spans = parsed.data.resourceSpans.flatMap((rs) => {
    const service = attributesOf(rs.resource.attributes)["service.name"];
    return rs.scopeSpans.flatMap((ss) =>
      ss.spans.map(
        (s): ReceivedSpan => ({
          traceId: s.traceId,
          spanId: s.spanId,
          parentSpanId: s.parentSpanId,
          name: s.name,
          kind: s.kind === 1 ? "internal" : s.kind === 3 ? "client" : "other",
          startNs: BigInt(s.startTimeUnixNano),
          endNs: BigInt(s.endTimeUnixNano),
          attributes: attributesOf(s.attributes),
          error: s.status.code === 2 ? (s.status.message ?? "") : undefined,
          service,
        }),
      ),
    );
  });
  return { ...base, spans };
}

async function collect(req: Request): Promise<Response> {
  const received = decode(req, await req.json());
  const tenants = new Set(received.spans.map((s) => s.attributes["edgeweave.tenant.id"]).filter((t): t is string => typeof t === "string"));
  const failure = [...tenants].map((t) => [t, failing.get(t)] as const).find(([, f]) => f !== undefined);
  if (failure?.[1] === "down") throw new TypeError("Network connection lost.");
  if (failure?.[1] === "refuse") return new Response("unavailable", { status: 503 });
  if (failure?.[1] === "hold") {
    const [tenant] = failure;
    holding.set(tenant, (holding.get(tenant) ?? 0) + 1);
    while (failing.get(tenant) === "hold") await new Promise((r) => setTimeout(r, 10));
    holding.set(tenant, (holding.get(tenant) ?? 1) - 1);
  }
  exported.push(received);
  return new Response("{}", { status: 200, headers: { "content-type": "application/json" } });
}

export function installCollector(): void {
  standingUpstream("https://otel.test", collect);
}

/** The collector fails `tenant`'s exports as `how` until `restoreCollector(tenant)`. */
export const failCollector = (tenant: string, how: Failure): void => void failing.set(tenant, how);
export const restoreCollector = (tenant: string): void => void failing.delete(tenant);

/** How many of `tenant`'s exports the collector is holding (`failCollector(tenant, "hold")`; restoring releases them). */
export const heldCount = (tenant: string): number => holding.get(tenant) ?? 0;

/** Every export received whole, in order (malformed ones included, with why). */
export const receivedExports = (): readonly Export[] => exported;

/** The spans of `tenant`'s traces (a trace is its tenant's when its agent span says so), grouped by trace, oldest first. */
export function tracesOf(tenant: string): ReceivedSpan[][] {
  const spans = exported.flatMap((e) => e.spans);
  const ids = [...new Set(spans.filter((s) => s.attributes["edgeweave.tenant.id"] === tenant).map((s) => s.traceId))];
  return ids.map((id) => spans.filter((s) => s.traceId === id));
}

/** Waits (the export leaves after the answer) until `tenant` has `count` traces whose spans stopped arriving. */
export async function waitForTraces(tenant: string, count: number, ms = 10_000): Promise<ReceivedSpan[][]> {
  const until = Date.now() + ms;
  for (;;) {
    const traces = tracesOf(tenant);
    if (traces.length >= count) return traces;
    if (Date.now() > until) throw new Error(`expected ${count} trace(s) of ${tenant}, got ${traces.length}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
