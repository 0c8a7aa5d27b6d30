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

/** SHA-256 of a key: a request hashes the key it presents once, for the operator check and the tenant lookup. */
export const digestOf = (key: string): Promise<ArrayBuffer> => crypto.subtle.digest("SHA-256", new TextEncoder().encode(key));

export async function hashKey(key: string): Promise<string> {
  return toHex(await digestOf(key));
}

/** The operator key's digest, computed once per isolate (its value does not change while the isolate runs). */
let secret: { key: string; digest: Promise<ArrayBuffer> } | undefined;

/**
 * Constant-time check that a presented key (by its digest) is `key`. Digests are compared,
 * so the comparison runs over equal lengths and its time reveals neither length nor content.
 */
export async function isSecret(presented: ArrayBuffer, key: string): Promise<boolean> {
  if (secret?.key !== key) secret = { key, digest: digestOf(key) };
  return crypto.subtle.timingSafeEqual(presented, await secret.digest);
}
