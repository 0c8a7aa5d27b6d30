/**
 * API key material. A key is `ew_` + 32 random bytes (base64url); only its SHA-256
 * (hex) is stored, so a leaked table does not leak usable keys.
 */
import { randomHex, toBase64url, toHex } from "../core/encoding";
export const KEY_PREFIX = "ew_";
const KEY_SHAPE = /^ew_[A-Za-z0-9_-]{43}$/;

export const newApiKey = (): string => KEY_PREFIX + toBase64url(crypto.getRandomValues(new Uint8Array(32)));

export const newKeyId = (): string => "key_" + randomHex(12);

/** Cheap pre-check so garbage never reaches the database. */
export const looksLikeApiKey = (s: string): boolean => KEY_SHAPE.test(s);

export async function hashKey(key: string): Promise<string> {
  return toHex(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(key)));
}

/**
 * Constant-time equality of two secrets. Both are hashed first so the comparison
 * runs over equal-length digests and its time reveals neither length nor content.
 */
export async function sameSecret(a: string, b: string): Promise<boolean> {
  const enc = new TextEncoder();
  const [da, db] = await Promise.all([crypto.subtle.digest("SHA-256", enc.encode(a)), crypto.subtle.digest("SHA-256", enc.encode(b))]);
  return crypto.subtle.timingSafeEqual(da, db);
}
