import { isAppError } from "./errors";

/**
 * A turn's spans, recorded in memory as the run goes and exported after its answer (core/otlp.ts).
 * Names and attributes follow OpenTelemetry's GenAI semantic conventions; docs/operations/tracing.md
 * lists what each span carries. Nothing here does I/O, so recording costs the run no round trip.
 */

export type AttrValue = string | number | boolean | string[];
/** Attributes as set; an undefined value is left out (most are "when available"). */
export type Attrs = Readonly<Record<string, AttrValue | undefined>>;

/** OTLP's span kinds: INTERNAL for work in this process, CLIENT for a call to another service. */
export type SpanKind = "internal" | "client";

export type SpanRecord = {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: SpanKind;
  startMs: number;
  endMs: number;
  attributes: Record<string, AttrValue>;
  /** Set when the operation failed: its message (a public error text, never an upstream's). */
  error?: string;
};

/** Where spans start: the turn's trace (a root span) or an open span (its child). */
export type SpanParent = {
  child(name: string, kind: SpanKind, attrs?: Attrs): Span;
  /** Whether prompts, answers and tool arguments may be recorded (the tenant opted in). */
  readonly content: boolean;
};

const hex = (bytes: number): string => Array.from(crypto.getRandomValues(new Uint8Array(bytes)), (b) => b.toString(16).padStart(2, "0")).join("");

/** One operation of the turn. `end` records it once; a span never ended is never exported. */
export class Span implements SpanParent {
  readonly spanId = hex(8);
  readonly #trace: TurnTrace;
  readonly #record: Omit<SpanRecord, "endMs">;
  #ended = false;

  constructor(trace: TurnTrace, name: string, kind: SpanKind, attrs: Attrs, parentSpanId?: string) {
    this.#trace = trace;
    this.#record = { traceId: trace.traceId, spanId: this.spanId, name, kind, startMs: Date.now(), attributes: {} };
    if (parentSpanId !== undefined) this.#record.parentSpanId = parentSpanId;
    this.set(attrs);
  }

  get content(): boolean {
    return this.#trace.content;
  }

  child(name: string, kind: SpanKind, attrs: Attrs = {}): Span {
    return new Span(this.#trace, name, kind, attrs, this.spanId);
  }

  set(attrs: Attrs): this {
    for (const [k, v] of Object.entries(attrs)) if (v !== undefined) this.#record.attributes[k] = v;
    return this;
  }

  /** The name is settled when the operation is (a model call's model is known once failover ends). */
  rename(name: string): this {
    this.#record.name = name;
    return this;
  }

  /** Marks the span failed: `error.type` is the low-cardinality code the conventions ask for. */
  fail(errorType: string, message: string): this {
    this.#record.attributes["error.type"] = errorType;
    this.#record.error = message;
    return this;
  }

  end(attrs: Attrs = {}): void {
    if (this.#ended) return;
    this.#ended = true;
    this.set(attrs);
    this.#trace.finished({ ...this.#record, endMs: Date.now() });
  }
}

/** The spans of one turn: one trace id, every span recorded once ended. */
export class TurnTrace implements SpanParent {
  readonly traceId = hex(16);
  readonly spans: SpanRecord[] = [];

  /** `content`: the tenant opted in to prompts and answers in its traces (off by default). */
  constructor(readonly content: boolean) {}

  child(name: string, kind: SpanKind, attrs: Attrs = {}): Span {
    return new Span(this, name, kind, attrs);
  }

  finished(span: SpanRecord): void {
    this.spans.push(span);
  }
}

/** Runs `work` inside a child span of `parent` (none when the turn is not traced), ending it however `work` ends. */
export async function inSpan<T>(
  parent: SpanParent | undefined,
  name: string,
  kind: SpanKind,
  attrs: Attrs,
  work: (span: Span | undefined) => Promise<T>,
): Promise<T> {
  const span = parent?.child(name, kind, attrs);
  try {
    return await work(span);
  } catch (e) {
    span?.fail(errorCode(e), publicMessage(e));
    throw e;
  } finally {
    span?.end();
  }
}

/** A failure's `error.type`: its BEM- code when it has one, else its class name. */
export function errorCode(e: unknown): string {
  if (isAppError(e)) return e.code;
  return e instanceof Error ? e.name : "Error";
}

/** A coded error's message is public (the client got it too); anything else may quote internals, so only its class is kept. */
export function publicMessage(e: unknown): string {
  return isAppError(e) ? e.message : "Internal error";
}

/** Content attributes are capped: a span is for reading, and a collector refuses huge ones. */
const MAX_CONTENT_CHARS = 16_384;

const cut = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

/** `value` with every string longer than `max` cut to it. */
function cutStrings(value: unknown, max: number): unknown {
  if (typeof value === "string") return cut(value, max);
  if (Array.isArray(value)) return value.map((v) => cutStrings(v, max));
  if (typeof value === "object" && value !== null) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, cutStrings(v, max)]));
  return value;
}

/**
 * JSON of at most MAX_CONTENT_CHARS that still parses (collectors read the messages as JSON): long texts are cut
 * inside it, shorter and shorter, and a list too long even so keeps its newest items.
 */
function fittedJson(value: unknown): string {
  let json = JSON.stringify(value);
  for (let max = MAX_CONTENT_CHARS / 4; json.length > MAX_CONTENT_CHARS && max >= 64; max /= 2) json = JSON.stringify(cutStrings(value, max));
  let items = Array.isArray(value) ? (cutStrings(value, 64) as unknown[]) : [];
  while (json.length > MAX_CONTENT_CHARS && items.length > 1) {
    items = items.slice(Math.ceil(items.length / 4));
    json = JSON.stringify(items);
  }
  return json.length > MAX_CONTENT_CHARS ? JSON.stringify(cut(json, MAX_CONTENT_CHARS / 2)) : json;
}

/** A content attribute (text, or JSON of prompts, answers, tool arguments), set only when the tenant opted in; `value` is built only then. */
export function contentOf(parent: SpanParent | undefined, value: () => unknown): string | undefined {
  if (!parent?.content) return undefined;
  const built = value();
  return typeof built === "string" ? cut(built, MAX_CONTENT_CHARS) : fittedJson(built);
}
