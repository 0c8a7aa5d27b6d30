import { errorText, log, rememberSecret } from "./log";
import { type AttrValue, type SpanRecord, TurnTrace } from "./trace";

/**
 * Spans leave as OTLP/HTTP JSON (the encoding every OTLP collector accepts: Langfuse, Honeycomb,
 * Grafana, Datadog…) to `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, with the headers of the secret
 * `OTEL_EXPORTER_OTLP_HEADERS` (`name=value,name=value`, values URL-encoded, as OpenTelemetry's own
 * variable is written). Export runs after the answer and never fails or delays a turn: a collector
 * that is down, slow or refuses loses those spans, counted in a warning.
 */

export type OtlpConfig = { endpoint: string; headers: Record<string, string>; contentTenants: ReadonlySet<string> };

/** Spans one exporter holds while a send is in flight; past it new spans are dropped, not buffered. */
export const MAX_QUEUED_SPANS = 2048;
/** Spans per request: collectors cap a request's size (Langfuse and Honeycomb take several MB). */
export const MAX_BATCH_SPANS = 512;
/** A collector slower than this loses the batch: the isolate is not kept waiting on it. */
export const EXPORT_TIMEOUT_MS = 5000;

let warned = "";
/** A configuration that cannot work is logged once per isolate, not once per turn. */
function warnOnce(message: string): undefined {
  if (warned !== message) log.warn("otlp", { message });
  warned = message;
  return undefined;
}

/** The settings read from the worker's env (docs/operations/tracing.md). */
export type OtelSettings = { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?: string; OTEL_EXPORTER_OTLP_HEADERS?: string; OTEL_CAPTURE_CONTENT_TENANTS?: string };

/** The exporter's configuration, or none when tracing is off (no endpoint) or its settings are malformed (warned). */
export function otlpConfig(env: OtelSettings): OtlpConfig | undefined {
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  if (!endpoint) return undefined;
  if (!URL.canParse(endpoint) || !/^https?:$/.test(new URL(endpoint).protocol))
    return warnOnce("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is not an http(s) URL: traces are off");
  const headers = headersOf(env.OTEL_EXPORTER_OTLP_HEADERS ?? "");
  if (typeof headers === "string") return warnOnce(`OTEL_EXPORTER_OTLP_HEADERS (name=value,… URL-encoded): ${headers}; traces are off`);
  const contentTenants = new Set(
    (env.OTEL_CAPTURE_CONTENT_TENANTS ?? "")
      .split(",")
      .map((t) => t.trim())
      .filter((t) => t !== ""),
  );
  return { endpoint, headers, contentTenants };
}

/** `name=value,name=value` with URL-encoded parts (OpenTelemetry's OTEL_EXPORTER_OTLP_HEADERS), or what is wrong with it (never a value: they are secrets). */
function headersOf(spec: string): Record<string, string> | string {
  const headers: Record<string, string> = {};
  for (const [i, pair] of spec.split(",").entries()) {
    if (pair.trim() === "") continue;
    const at = pair.indexOf("=");
    if (at <= 0) return `entry ${i + 1} is not name=value`;
    try {
      const value = decodeURIComponent(pair.slice(at + 1).trim());
      // Header values are credentials (Langfuse's Basic auth, Honeycomb's team key): never in a log line.
      rememberSecret(value);
      headers[decodeURIComponent(pair.slice(0, at).trim())] = value;
    } catch {
      return `entry ${i + 1} is not URL-encoded`;
    }
  }
  return headers;
}

type OtlpValue = { stringValue: string } | { intValue: string } | { doubleValue: number } | { boolValue: boolean } | { arrayValue: { values: OtlpValue[] } };

function otlpValue(v: AttrValue): OtlpValue {
  if (typeof v === "string") return { stringValue: v };
  if (typeof v === "boolean") return { boolValue: v };
  if (typeof v === "number") return Number.isInteger(v) ? { intValue: String(v) } : { doubleValue: v };
  return { arrayValue: { values: v.map((s) => ({ stringValue: s })) } };
}

const nanos = (ms: number): string => `${ms}000000`;

/** OTLP's span kind numbers (SPAN_KIND_INTERNAL, SPAN_KIND_CLIENT) and status codes (STATUS_CODE_ERROR). */
const KIND = { internal: 1, client: 3 } as const;
const STATUS_ERROR = 2;

/** An ExportTraceServiceRequest in OTLP's JSON encoding (ids in hex, times in nanoseconds as strings). */
export function encodeSpans(spans: readonly SpanRecord[]) {
  return {
    resourceSpans: [
      {
        resource: { attributes: [{ key: "service.name", value: { stringValue: "edgeweave" } }] },
        scopeSpans: [
          {
            scope: { name: "edgeweave" },
            spans: spans.map((s) => ({
              traceId: s.traceId,
              spanId: s.spanId,
              ...(s.parentSpanId !== undefined ? { parentSpanId: s.parentSpanId } : {}),
              name: s.name,
              kind: KIND[s.kind],
              startTimeUnixNano: nanos(s.startMs),
              endTimeUnixNano: nanos(s.endMs),
              attributes: Object.entries(s.attributes).map(([key, v]) => ({ key, value: otlpValue(v) })),
              status: s.error !== undefined ? { code: STATUS_ERROR, message: s.error } : {},
            })),
          },
        ],
      },
    ],
  };
}

/** Spans this isolate dropped (collector down, slow, refusing, or the queue full), for the warning. */
let droppedTotal = 0;

/**
 * Sends ended turns' spans, batched: one request at a time, holding what arrives meanwhile
 * (a busy thread object sends several turns' spans in one request). `keep` is the place's
 * waitUntil, so the send outlives the answer without delaying it.
 */
export class SpanExporter {
  readonly #config: OtlpConfig;
  readonly #keep: (p: Promise<unknown>) => void;
  readonly #queue: SpanRecord[] = [];
  #sending: Promise<void> | undefined;

  constructor(config: OtlpConfig, keep: (p: Promise<unknown>) => void) {
    this.#config = config;
    this.#keep = keep;
  }

  /** A new turn's trace; its spans carry content only when `tenant` opted in. */
  trace(tenant: string): TurnTrace {
    return new TurnTrace(this.#config.contentTenants.has(tenant));
  }

  add(spans: readonly SpanRecord[]): void {
    const room = MAX_QUEUED_SPANS - this.#queue.length;
    if (spans.length > room) this.#dropped(spans.length - room, "queue full");
    this.#queue.push(...spans.slice(0, Math.max(0, room)));
    if (this.#sending || this.#queue.length === 0) return;
    this.#sending = this.#drain().finally(() => (this.#sending = undefined));
    this.#keep(this.#sending);
  }

  async #drain(): Promise<void> {
    while (this.#queue.length > 0) await this.#send(this.#queue.splice(0, MAX_BATCH_SPANS));
  }

  async #send(batch: SpanRecord[]): Promise<void> {
    // A timer cleared once the collector answers (AbortSignal.timeout's would keep the object busy, unevictable, for its whole span).
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(new Error(`no answer in ${EXPORT_TIMEOUT_MS} ms`)), EXPORT_TIMEOUT_MS);
    try {
      const res = await fetch(this.#config.endpoint, {
        method: "POST",
        headers: { ...this.#config.headers, "content-type": "application/json" },
        body: JSON.stringify(encodeSpans(batch)),
        signal: abort.signal,
      });
      await res.body?.cancel();
      if (!res.ok) this.#dropped(batch.length, `collector answered ${res.status}`);
    } catch (e) {
      this.#dropped(batch.length, errorText(e));
    } finally {
      clearTimeout(timer);
    }
  }

  #dropped(count: number, reason: string): void {
    droppedTotal += count;
    log.warn("otlp", { message: `${count} span(s) dropped: ${reason}`, dropped_total: droppedTotal });
  }
}

/** An exporter for this place (a request, a thread object), or none when the deployment does not trace. */
export function spanExporter(env: OtelSettings, keep: (p: Promise<unknown>) => void): SpanExporter | undefined {
  const config = otlpConfig(env);
  return config && new SpanExporter(config, keep);
}
