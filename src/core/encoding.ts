/** Byte encodings used for keys, digests and signatures (workerd has no Buffer). */

export const toHex = (bytes: ArrayBuffer | Uint8Array): string =>
  Array.from(bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes), (b) => b.toString(16).padStart(2, "0")).join("");

/** Even-length lowercase or uppercase hex; callers check the shape first. */
export function fromHex(hex: string): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = Number.parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return out;
}

/** `bytes` random bytes as lowercase hex (ids, secrets): the one random-hex helper. */
export const randomHex = (bytes = 16): string => toHex(crypto.getRandomValues(new Uint8Array(bytes)));

/** Unpadded base64url (RFC 4648 §5), for short values such as API keys. */
export function toBase64url(bytes: Uint8Array): string {
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}
