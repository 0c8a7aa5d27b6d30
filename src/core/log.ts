/**
 * The one logger. Every line is one JSON object on stderr (Workers Logs index
 * the fields), and every string in it — at any depth — passes through
 * `redact()` first, so an upstream that echoes our Authorization header, or an
 * error message that quotes a key, never puts a secret in the log.
 *
 *   log.error("usage", { message: errorText(e) });
 *   log.error("request", { requestId, code, internal });
 *
 * Where lines go is a sink: the console by default; tests install their own to
 * capture lines, assert on them and keep expected errors out of the output.
 */
export type LogLevel = "error" | "warn" | "info";
export type LogRecord = { level: LogLevel; where: string } & Record<string, unknown>;
export type LogSink = (record: LogRecord, line: string) => void;

const consoleSink: LogSink = (record, line) => (record.level === "info" ? console.log(line) : console.error(line));
let sink: LogSink = consoleSink;

/** Replaces the sink (null: the console); returns the previous one so a caller can restore it. */
export function setLogSink(next: LogSink | null): LogSink {
  const previous = sink;
  sink = next ?? consoleSink;
  return previous;
}

// ---- redaction -------------------------------------------------------------

/** Secret values known to this isolate (provider keys as they are used, the operator key…). */
const known = new Set<string>();
const MIN_SECRET = 8; // shorter values would redact ordinary words

/** Redacts this exact value from every later log line (and its case variants). */
export function rememberSecret(value: string | undefined): void {
  if (value && value.length >= MIN_SECRET) known.add(value);
}

/** Env bindings whose names say they hold a secret. */
const SECRET_NAME = /(^|_)(KEY|SECRET|TOKEN|PASSWORD|CREDENTIALS?)$/;

/** Remembers every string binding of `env` whose name marks it secret (OPERATOR_KEY, OPENAI_API_KEY, …). */
const seenEnvs = new WeakSet<object>();
export function rememberEnvSecrets(env: object): void {
  if (seenEnvs.has(env)) return;
  seenEnvs.add(env);
  for (const [name, value] of Object.entries(env)) if (SECRET_NAME.test(name) && typeof value === "string") rememberSecret(value);
}

const R = "[redacted]";
/** Shapes of credentials, whoever sent them: header values, bearer tokens, well-known key prefixes. */
const PATTERNS: [RegExp, string][] = [
  // "Authorization: Bearer x", "x-api-key": "x", api_key=x … (the header's value up to a delimiter)
  [
    /((?:proxy-)?authorization|x-api-key|api[-_]?key|x-goog-api-key|access[-_]token|secret|password)(["']?\s*[:=]\s*["']?)(?:(bearer|basic|token)\s+)?[^\s"',;&}\]]+/gi,
    `$1$2$3 ${R}`,
  ],
  [/\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{6,}/gi, `$1 ${R}`],
  // Provider and edgeweave key shapes: OpenAI/Anthropic sk-…, Groq gsk_…, NVIDIA nvapi-…, Google AIza…, ours ew_…, hook secrets whsec_….
  [/\b(sk|gsk|nvapi|xai)[-_][A-Za-z0-9_-]{4,}/gi, `$1-${R}`],
  [/\bAIza[A-Za-z0-9_-]{20,}/g, R],
  [/\bew_[A-Za-z0-9_-]{20,}/g, `ew_${R}`],
  [/\bwhsec_[A-Za-z0-9]{16,}/g, `whsec_${R}`],
];

/** The text with every known secret value and every credential-shaped token replaced by [redacted]. */
export function redact(text: string): string {
  let out = text;
  for (const s of known) {
    if (out.toLowerCase().includes(s.toLowerCase())) out = out.replace(new RegExp(escapeRegExp(s), "gi"), R);
  }
  for (const [re, to] of PATTERNS) out = out.replace(re, to);
  return out;
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

const MAX_FIELD = 2000; // a log line is for reading; upstream bodies are cut

function clean(value: unknown, depth = 0): unknown {
  if (typeof value === "string") return redact(value.length > MAX_FIELD ? `${value.slice(0, MAX_FIELD)}…` : value);
  if (depth > 5 || value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map((v) => clean(v, depth + 1));
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, clean(v, depth + 1)]));
}

/** An error's text for a log field (name and message; the stack when asked). */
export function errorText(e: unknown, withStack = false): string {
  if (e instanceof Error) return withStack && e.stack ? e.stack : `${e.name}: ${e.message}`;
  return String(e);
}

function write(level: LogLevel, where: string, fields: Record<string, unknown>): void {
  const record = clean({ level, where, ...fields }) as LogRecord;
  sink(record, JSON.stringify(record));
}

export const log = {
  error: (where: string, fields: Record<string, unknown> = {}) => write("error", where, fields),
  warn: (where: string, fields: Record<string, unknown> = {}) => write("warn", where, fields),
  info: (where: string, fields: Record<string, unknown> = {}) => write("info", where, fields),
};
