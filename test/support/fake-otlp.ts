import otlp from "@opentelemetry/otlp-transformer/build/src/generated/root";
import protobuf from "protobufjs/minimal";
import { standingUpstream } from "./upstream";

/**
 * An OTLP/HTTP collector at the far side of the network (vitest.config.ts points every turn's
 * export at it). Each request is checked and decoded by OpenTelemetry's own protobuf class for
 * ExportTraceServiceRequest, generated from the OTLP protos in @opentelemetry/otlp-transformer
 * (pinned at 0.216.0, the last release that ships it: later ones only encode), as a collector reads
 * it: a field of the wrong type or an id of the wrong length is a malformed export, kept as such.
 * A test makes the collector fail for its own tenant only.
 */

type Value = string | number | boolean | Value[];
/** A decoded AnyValue (`toObject` with 64-bit integers as decimal strings): one of its fields is set. */
type AnyValue = { stringValue?: string; intValue?: string; doubleValue?: number; boolValue?: boolean; arrayValue?: { values?: AnyValue[] } };
type KeyValue = { key: string; value?: AnyValue };
type Span = {
  traceId: Uint8Array;
  spanId: Uint8Array;
  parentSpanId?: Uint8Array;
  name: string;
  kind?: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes?: KeyValue[];
  status?: { code?: number; message?: string };
};
type Decoded = { resourceSpans?: { resource?: { attributes?: KeyValue[] }; scopeSpans?: { spans?: Span[] }[] }[] };
/** The generated static class's methods used here (its typings only declare a protobufjs Root). */
type MessageClass = {
  verify(message: unknown): string | null;
  fromObject(object: unknown): object;
  encode(message: object, writer: protobuf.Writer): protobuf.Writer;
  decode(bytes: Uint8Array): object;
  toObject(message: object, options: { longs: StringConstructor; enums: NumberConstructor }): Decoded;
};
const ExportTraceServiceRequest: MessageClass = (
  otlp as unknown as { opentelemetry: { proto: { collector: { trace: { v1: { ExportTraceServiceRequest: MessageClass } } } } } }
).opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;

/** OTLP/JSON's ids are hex, not protobuf JSON's base64; their length is the proto's (16 bytes a trace, 8 a span). */
const ID_BYTES: Record<string, number> = { traceId: 16, spanId: 8, parentSpanId: 8 };

/** A 64-bit integer as protobufjs's Long-like `{ low, high }` (32-bit halves), which `verify` and `fromObject` take. */
function longBits(n: bigint, unsigned: boolean) {
  const bits = BigInt.asUintN(64, n);
  return { low: Number(bits & 0xffffffffn) | 0, high: Number(bits >> 32n) | 0, unsigned };
}

/** OTLP/JSON as protobufjs's message objects take it: hex ids as bytes, 64-bit integers' decimal strings as Long halves (anything else left for `verify` to judge). */
function messageForm(value: unknown, key = ""): unknown {
  if (Array.isArray(value)) return value.map((v) => messageForm(v));
  if (typeof value === "object" && value !== null) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, messageForm(v, k)]));
  if (typeof value !== "string") return value;
  const bytes = ID_BYTES[key];
  if (bytes !== undefined) {
    if (!/^([0-9a-f]{2})*$/i.test(value) || (value.length !== bytes * 2 && !(key === "parentSpanId" && value === "")))
      throw new Error(`${key}: ${bytes} bytes in hex expected, got '${value}'`);
    return Uint8Array.from(value.match(/../g) ?? [], (h) => Number.parseInt(h, 16));
  }
  if ((key === "intValue" || key.endsWith("UnixNano")) && /^-?\d+$/.test(value)) return longBits(BigInt(value), key !== "intValue");
  return value;
}

/** The export as OpenTelemetry's classes decode it (through protobuf's wire form), or throws why they refuse it. */
function officialDecode(body: unknown): Decoded {
  const form = messageForm(body);
  const wrong = ExportTraceServiceRequest.verify(form);
  if (wrong) throw new Error(wrong);
  // protobufjs's plain writer: its Buffer one writes long strings with Buffer#utf8Write, which workerd's
  // Buffer implements with another default length (it throws past offset 0).
  const bytes = ExportTraceServiceRequest.encode(ExportTraceServiceRequest.fromObject(form), new protobuf.Writer()).finish();
  return ExportTraceServiceRequest.toObject(ExportTraceServiceRequest.decode(bytes), { longs: String, enums: Number });
}

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

function decodeValue(v: AnyValue | undefined): Value {
  if (v?.stringValue !== undefined) return v.stringValue;
  if (v?.intValue !== undefined) return Number(v.intValue);
  if (v?.doubleValue !== undefined) return v.doubleValue;
  if (v?.boolValue !== undefined) return v.boolValue;
  if (v?.arrayValue !== undefined) return (v.arrayValue.values ?? []).map(decodeValue);
  throw new Error("an attribute without a value");
}
const attributesOf = (kvs: KeyValue[] = []) => Object.fromEntries(kvs.map((kv) => [kv.key, decodeValue(kv.value)]));
const hex = (bytes: Uint8Array) => [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");

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
  try {
    return { ...base, spans: spansOf(officialDecode(body)) };
  } catch (e) {
    return { ...base, spans: [], malformed: e instanceof Error ? e.message : String(e) };
  }
}

function spansOf(decoded: Decoded): ReceivedSpan[] {
  return (decoded.resourceSpans ?? []).flatMap((rs) => {
    const service = attributesOf(rs.resource?.attributes)["service.name"];
    return (rs.scopeSpans ?? []).flatMap((ss) =>
      (ss.spans ?? []).map(
        (s): ReceivedSpan => ({
          traceId: hex(s.traceId),
          spanId: hex(s.spanId),
          parentSpanId: s.parentSpanId?.length ? hex(s.parentSpanId) : undefined,
          name: s.name,
          kind: s.kind === 1 ? "internal" : s.kind === 3 ? "client" : "other",
          startNs: BigInt(s.startTimeUnixNano),
          endNs: BigInt(s.endTimeUnixNano),
          attributes: attributesOf(s.attributes),
          error: s.status?.code === 2 ? (s.status.message ?? "") : undefined,
          service,
        }),
      ),
    );
  });
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
    const malformed = exported.flatMap((e) => e.malformed ?? []);
    if (Date.now() > until)
      throw new Error(`expected ${count} trace(s) of ${tenant}, got ${traces.length}; malformed exports: ${malformed.join("; ") || "none"}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
