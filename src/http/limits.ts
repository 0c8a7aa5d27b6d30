import { createMiddleware } from "hono/factory";
import { AppError } from "../errors";
import type { AppEnv } from "./app-env";

/**
 * Request body limits, applied to every /v1 route before any handler or zod
 * validator reads the body: size per route group (413 BEM-013, from
 * Content-Length and again while streaming), media type (415 BEM-012), UTF-8
 * and JSON syntax (400 BEM-010), nesting depth and total size of the document
 * (400 BEM-014). The checked text is handed on to the validators through
 * Hono's body cache, so nothing parses an unchecked body.
 */
export const KiB = 1024;
export const MiB = 1024 * KiB;

export const BODY_LIMITS = {
  /** chat, invoke, route, thread state: conversations are big. */
  run: 1 * MiB,
  /** signed webhook deliveries. */
  webhook: 256 * KiB,
  /** LangGraph checkpoint batches: whole graph states, values chunked in storage (5 MB values round-trip). */
  langgraph: 16 * MiB,
  /** memory, admin, webhook registration, tasks: small documents. */
  small: 64 * KiB,
} as const;

export const MAX_JSON_DEPTH = 32;
/** Array items plus object keys, summed over the whole document. */
export const MAX_JSON_ITEMS = 10_000;

const WEBHOOK_DELIVERY = /^\/v1\/webhooks\/[^/]+$/;
const RUN_ROUTES = /^\/v1\/(chat\/|invoke$|invoke\/|route$|threads\/|responses$|conversations)/;
const LANGGRAPH_ROUTES = /^\/v1\/langgraph\/threads\//;
const STORE_ROUTES = /^\/v1\/langgraph\/store\//;

export const isWebhookDelivery = (method: string, path: string): boolean => method === "POST" && WEBHOOK_DELIVERY.test(path);

export function bodyLimitFor(method: string, path: string): number {
  if (isWebhookDelivery(method, path)) return BODY_LIMITS.webhook;
  if (RUN_ROUTES.test(path)) return BODY_LIMITS.run;
  if (LANGGRAPH_ROUTES.test(path)) return BODY_LIMITS.langgraph;
  if (STORE_ROUTES.test(path)) return BODY_LIMITS.run;
  return BODY_LIMITS.small;
}

const tooLarge = (limit: number) => new AppError("BEM-013", `Request body is larger than ${limit} bytes`);

/** Reads the whole body, failing as soon as it passes `limit` bytes (whatever Content-Length claimed). */
export async function readCapped(req: Request, limit: number): Promise<Uint8Array<ArrayBuffer>> {
  const declared = req.headers.get("content-length");
  if (declared !== null && Number(declared) > limit) throw tooLarge(limit);
  if (!req.body) return new Uint8Array(0);
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      throw tooLarge(limit);
    }
    chunks.push(value);
  }
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

/** Bytes → text, or BEM-010 for invalid UTF-8. */
export function decodeUtf8(bytes: Uint8Array): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw new AppError("BEM-010", "Body is not valid UTF-8");
  }
}

/** Nesting depth of a JSON text, counted without parsing (brackets outside strings). */
export function jsonDepth(text: string, stopAbove = Infinity): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 0x5c) i++; // backslash: skip the escaped character
      else if (ch === 0x22) inString = false;
    } else if (ch === 0x22) inString = true;
    else if (ch === 0x5b || ch === 0x7b) {
      if (++depth > max && (max = depth) > stopAbove) return max;
    } else if (ch === 0x5d || ch === 0x7d) depth--;
  }
  return max;
}

/** Array items plus object keys over the whole value (iterative: depth is already bounded, but cheap to be safe). */
export function jsonItems(value: unknown, stopAbove = Infinity): number {
  let count = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v !== "object" || v === null) continue;
    const children = Array.isArray(v) ? v : Object.values(v);
    count += children.length;
    if (count > stopAbove) return count;
    for (const c of children) if (typeof c === "object" && c !== null) stack.push(c);
  }
  return count;
}

/** JSON text → value under the depth and size rules (BEM-010 syntax, BEM-014 too deep or too long). */
export function parseGuardedJson(text: string): unknown {
  if (jsonDepth(text, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) throw new AppError("BEM-014", `JSON is nested deeper than ${MAX_JSON_DEPTH} levels`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new AppError("BEM-010", "Body is not valid JSON");
  }
  if (jsonItems(value, MAX_JSON_ITEMS) > MAX_JSON_ITEMS) throw new AppError("BEM-014", `JSON holds more than ${MAX_JSON_ITEMS} array items and object keys in total`);
  return value;
}

const JSON_MEDIA = /^application\/([\w.-]+\+)?json$/i;
export const isJsonMediaType = (contentType: string | undefined): boolean => contentType !== undefined && JSON_MEDIA.test(contentType.split(";")[0]!.trim());

const BODYLESS = new Set(["GET", "HEAD", "OPTIONS"]);

export const bodyLimits = createMiddleware<AppEnv>(async (c, next) => {
  const method = c.req.method;
  if (BODYLESS.has(method)) return next();
  const limit = bodyLimitFor(method, c.req.path);
  const bytes = await readCapped(c.req.raw, limit);
  // Hand the bytes on: the raw stream is consumed. Hono stores promises in its
  // body cache although the field types say values, hence the casts.
  c.req.bodyCache.arrayBuffer = Promise.resolve(bytes.buffer) as unknown as ArrayBuffer;
  // A delivery is parsed by its route, after its signature is checked.
  if (isWebhookDelivery(method, c.req.path) || bytes.byteLength === 0) return next();
  if (!isJsonMediaType(c.req.header("content-type"))) throw new AppError("BEM-012", "Send the body as application/json");
  const text = decodeUtf8(bytes);
  parseGuardedJson(text);
  c.req.bodyCache.text = Promise.resolve(text) as unknown as string;
  return next();
});
