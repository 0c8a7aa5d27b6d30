import { bodyLimit } from "hono/body-limit";
import { createMiddleware } from "hono/factory";
import { AppError } from "../core/errors";
import type { AppEnv } from "./app-env";

/**
 * Request body limits. Each route declares its size (src/edge/access.ts):
 * 413 BEM-013 from Content-Length and again while streaming (Hono's bodyLimit);
 * JSON routes then check media type (415 BEM-012), UTF-8 and JSON syntax
 * (400 BEM-010), nesting depth and total size of the document (400 BEM-014)
 * before any validator parses the body.
 */
export const KiB = 1024;
export const MiB = 1024 * KiB;

export const BODY_LIMITS = {
  /** GET and DELETE: no body. */
  none: 0,
  /** chat, invoke, route, thread state: conversations are big. */
  conversation: 1 * MiB,
  /**
   * Anthropic Messages (POST /v1/messages, count_tokens): Claude Code resends its whole session on
   * every call and outgrows 1 MiB within an hour (Anthropic takes 32 MB). 16 MiB: the whole request
   * is one RPC argument to the thread's object (a 32 MiB limit, with the reply and its summary
   * beside it), and a stateful thread holds at most MAX_THREAD_BYTES (16 MiB) anyway.
   */
  messages: 16 * MiB,
  /** signed webhook deliveries. */
  webhook: 256 * KiB,
  /** LangGraph checkpoint batches: whole graph states, values chunked in storage (5 MB values round-trip). */
  langgraph: 16 * MiB,
  /** memory, admin, webhook registration, tasks, the LangGraph checkpointer's reads: small documents. */
  small: 64 * KiB,
} as const;

export const MAX_JSON_DEPTH = 32;
/** Array items plus object keys, summed over the whole document. */
export const MAX_JSON_ITEMS = 10_000;
/**
 * The same for LangGraph checkpointer bodies ("langgraph"). 10,000 held one task's writes to ~1,600 and a
 * checkpoint to ~1,400 changed channels, far below what the rest of the path holds: a write is 6 items
 * (47 bytes at its smallest), so the 16 MiB body alone would let through ~2 million. Past the parse, each
 * write or blob is one row and one INSERT of at most 12 bound values (SQLite's 100 never nears) whose value
 * is chunked past LANGGRAPH_CHUNK_BYTES (rows stay under production's 2 MB; a checkpoint's row holds its
 * channel versions too, at most MAX_VERSIONS_BYTES, 413 BEM-147), and bytes are capped per checkpoint
 * (MAX_THREAD_BYTES) and per thread (MAX_THREAD_HISTORY_BYTES); what grows with the count is the rows of
 * one transaction and the rate charge, one request per 10 rows (chargeOps). A row is at least 4 items
 * (a blob of an empty channel), so 100,000 items are at most 25,000 rows: 2,500 of the 3,000 requests
 * RATE_LIMIT_LANGGRAPH allows a key a minute. A cap above 120,000 would take requests no allowance could
 * ever charge (429 every time, each retry spending the minute). It holds ~16,600 writes of one task, or
 * a checkpoint of ~14,000 changed channels.
 */
export const MAX_LANGGRAPH_JSON_ITEMS = 100_000;
/** The same for Anthropic Messages bodies: a long Claude Code session is tens of thousands of blocks and tool-schema keys. */
export const MAX_MESSAGES_JSON_ITEMS = 1_000_000;

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
      if (ch === 0x5c)
        i++; // backslash: skip the escaped character
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
export function parseGuardedJson(text: string, maxItems = MAX_JSON_ITEMS): unknown {
  if (jsonDepth(text, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) throw new AppError("BEM-014", `JSON is nested deeper than ${MAX_JSON_DEPTH} levels`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new AppError("BEM-010", "Body is not valid JSON");
  }
  if (jsonItems(value, maxItems) > maxItems) throw new AppError("BEM-014", `JSON holds more than ${maxItems} array items and object keys in total`);
  return value;
}

const JSON_MEDIA = /^application\/([\w.-]+\+)?json$/i;
export const isJsonMediaType = (contentType: string | undefined): boolean => contentType !== undefined && JSON_MEDIA.test(contentType.split(";")[0]!.trim());

const tooLarge = (limit: number) => new AppError("BEM-013", `Request body is larger than ${limit} bytes`);

/** Hono's bodyLimit with our coded 413 (checked from Content-Length, and on the bytes actually read). */
export const capBody = (limit: number) =>
  bodyLimit({
    maxSize: limit,
    onError: () => {
      throw tooLarge(limit);
    },
  });

/**
 * A JSON body's checks before any validator parses it: media type (415 BEM-012),
 * UTF-8 and syntax (400 BEM-010), depth and size (400 BEM-014). The bytes stay in
 * Hono's body cache, so the route's validator reads the same checked text.
 */
export const guardJsonUpTo = (maxItems: number) =>
  createMiddleware<AppEnv>(async (c, next) => {
    const bytes = new Uint8Array(await c.req.arrayBuffer());
    if (bytes.byteLength === 0) return next(); // the route's validator answers BEM-010 for a required body
    if (!isJsonMediaType(c.req.header("content-type"))) throw new AppError("BEM-012", "Send the body as application/json");
    parseGuardedJson(decodeUtf8(bytes), maxItems);
    return next();
  });
export const guardJson = guardJsonUpTo(MAX_JSON_ITEMS);
