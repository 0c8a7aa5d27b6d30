/**
 * Webhook signatures, with the hook's secret, plus `X-Edgeweave-Timestamp` (unix seconds):
 * - deliveries (inbound, scheme v1): `X-Edgeweave-Signature: sha256=<hex HMAC-SHA256 of "<timestamp>.<raw body>">`;
 * - callbacks (outbound, scheme v2): `X-Edgeweave-Signature: v2=<hex HMAC-SHA256 of "callback.<timestamp>.<raw body>">`;
 * - budget events (outbound, scheme b1, a budget's own secret): `X-Edgeweave-Signature: b1=<hex HMAC-SHA256 of
 *   "budget.<timestamp>.<event id>.<raw body>">`, the event id also in `X-Edgeweave-Event`.
 * The signed strings never coincide (a delivery's starts with a digit), so a received callback
 * posted back to the hook cannot pass as a delivery, whatever its header says, nor a captured
 * delivery as a callback; the header's label says which scheme a receiver verifies.
 */
import { fromHex, randomHex, toHex } from "../core/encoding";
export const SIGNATURE_HEADER = "x-edgeweave-signature";
export const TIMESTAMP_HEADER = "x-edgeweave-timestamp";
export const DELIVERY_HEADER = "x-edgeweave-delivery";

/** Deliveries signed more than this far from now (either way) are refused as replays. */
export const REPLAY_WINDOW_SECONDS = 300;

/**
 * How long a replay record must be kept: a request accepted at `t` may carry a timestamp up to
 * 300 s ahead of t's second, and that timestamp is accepted until the end of the 300th second
 * after it — up to 601 s after t, never more (see withinReplayWindow).
 */
export const REPLAY_RECORD_MS = (2 * REPLAY_WINDOW_SECONDS + 1) * 1000;

const encoder = new TextEncoder();
// Exactly this, nothing around it: no trim() (it strips U+00A0, U+FEFF, VT, FF …), so one MAC has one accepted form
// apart from the hex case, and the replay record is keyed on the parsed bytes.
const SIGNATURE = /^sha256=([0-9a-fA-F]{64})$/;
const TIMESTAMP = /^[0-9]{1,12}$/;

const hmacKey = (secret: string, usage: "sign" | "verify") =>
  crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, [usage]);

function signedBytes(timestamp: string, body: Uint8Array): Uint8Array<ArrayBuffer> {
  const prefix = encoder.encode(`${timestamp}.`);
  const out = new Uint8Array(prefix.length + body.length);
  out.set(prefix, 0);
  out.set(body, prefix.length);
  return out;
}

/** The header value for `body` signed at `timestamp`. */
export async function sign(secret: string, timestamp: string, body: Uint8Array | string): Promise<string> {
  const bytes = typeof body === "string" ? encoder.encode(body) : body;
  const mac = await crypto.subtle.sign("HMAC", await hmacKey(secret, "sign"), signedBytes(timestamp, bytes));
  return `sha256=${toHex(mac)}`;
}

const CALLBACK_PREFIX = "callback.";
const CALLBACK_SIGNATURE = /^v2=([0-9a-f]{64})$/;

/** The v2 header value for a callback `body` sent at `timestamp`: the MAC of "callback.<timestamp>.<body>". */
async function signCallback(secret: string, timestamp: string, body: string): Promise<string> {
  const mac = await crypto.subtle.sign("HMAC", await hmacKey(secret, "sign"), encoder.encode(`${CALLBACK_PREFIX}${timestamp}.${body}`));
  return `v2=${toHex(mac)}`;
}

/** Headers for an outbound callback (scheme v2). */
export async function callbackHeaders(secret: string, body: string, now = Date.now()): Promise<Record<string, string>> {
  const timestamp = String(Math.floor(now / 1000));
  return { [TIMESTAMP_HEADER]: timestamp, [SIGNATURE_HEADER]: await signCallback(secret, timestamp, body) };
}

/** What a callback receiver checks (constant time); the reference for docs/guides/webhooks.md's receiver recipe. */
export async function verifyCallback(secret: string, timestamp: string, body: string, header: string): Promise<boolean> {
  const hex = CALLBACK_SIGNATURE.exec(header)?.[1];
  if (!hex) return false;
  return crypto.subtle.verify("HMAC", await hmacKey(secret, "verify"), fromHex(hex), encoder.encode(`${CALLBACK_PREFIX}${timestamp}.${body}`));
}

const BUDGET_SIGNATURE = /^b1=([0-9a-f]{64})$/;
export const EVENT_HEADER = "x-edgeweave-event";
const budgetSigned = (timestamp: string, event: string, body: string) => encoder.encode(`budget.${timestamp}.${event}.${body}`);

/** Headers for an outbound budget event (scheme b1): the MAC covers the timestamp and the event id, so a receiver can refuse a replay. */
export async function budgetEventHeaders(secret: string, event: string, body: string, now = Date.now()): Promise<Record<string, string>> {
  const timestamp = String(Math.floor(now / 1000));
  const mac = await crypto.subtle.sign("HMAC", await hmacKey(secret, "sign"), budgetSigned(timestamp, event, body));
  return { [TIMESTAMP_HEADER]: timestamp, [EVENT_HEADER]: event, [SIGNATURE_HEADER]: `b1=${toHex(mac)}` };
}

/**
 * What a budget event's receiver checks (docs/operations/budgets.md): the MAC (constant time), a timestamp within
 * REPLAY_WINDOW_SECONDS, and an event id it has not seen (`seen` must keep ids for REPLAY_RECORD_MS). True: accept it once.
 */
export async function verifyBudgetEvent(
  secret: string,
  headers: Headers,
  body: string,
  seen: { has(id: string): boolean; add(id: string): unknown },
  now = Date.now(),
): Promise<boolean> {
  const timestamp = headers.get(TIMESTAMP_HEADER) ?? "";
  const event = headers.get(EVENT_HEADER) ?? "";
  const hex = BUDGET_SIGNATURE.exec(headers.get(SIGNATURE_HEADER) ?? "")?.[1];
  const at = parseTimestamp(timestamp);
  if (!hex || at === null || !withinReplayWindow(at, now) || seen.has(event)) return false;
  if (!(await crypto.subtle.verify("HMAC", await hmacKey(secret, "verify"), fromHex(hex), budgetSigned(timestamp, event, body)))) return false;
  seen.add(event);
  return true;
}

/** A well-formed timestamp header as seconds, or null. */
export function parseTimestamp(raw: string | undefined): number | null {
  return raw !== undefined && TIMESTAMP.test(raw) ? Number(raw) : null;
}

export const withinReplayWindow = (timestamp: number, now = Date.now()): boolean => Math.abs(Math.floor(now / 1000) - timestamp) <= REPLAY_WINDOW_SECONDS;

/** The MAC bytes of a `sha256=<64 hex>` header (either hex case), or null for anything else. */
export function parseSignature(header: string | undefined): Uint8Array<ArrayBuffer> | null {
  const hex = header === undefined ? undefined : SIGNATURE.exec(header)?.[1];
  return hex ? fromHex(hex.toLowerCase()) : null;
}

/** Constant-time check (crypto.subtle.verify compares the MACs itself). A malformed header is simply false. */
export async function verify(secret: string, timestamp: string, body: Uint8Array, header: string | Uint8Array<ArrayBuffer> | undefined): Promise<boolean> {
  const mac = typeof header === "string" || header === undefined ? parseSignature(header) : header;
  if (!mac) return false;
  return crypto.subtle.verify("HMAC", await hmacKey(secret, "verify"), mac, signedBytes(timestamp, body));
}

/** A new hook secret: 32 random bytes, hex, with a recognisable prefix. */
export function newSecret(): string {
  return `whsec_${randomHex(32)}`;
}
