/**
 * RFC 6901 JSON Pointer: "" is the whole document, "/a/0/b~1c" walks keys and
 * array indexes ("~1" is "/", "~0" is "~"). Pure; used to pick the thread id and
 * the text out of a webhook payload.
 */
export type JsonPointer = readonly string[];

const ARRAY_INDEX = /^(0|[1-9][0-9]*)$/;

/** Parses a pointer into its reference tokens; null when it is not a valid pointer. */
export function parsePointer(raw: string): JsonPointer | null {
  if (raw === "") return [];
  if (!raw.startsWith("/")) return null;
  const tokens = raw.slice(1).split("/");
  // "~" must be followed by 0 or 1.
  if (tokens.some((t) => /~(?![01])/.test(t))) return null;
  return tokens.map((t) => t.replaceAll("~1", "/").replaceAll("~0", "~"));
}

/** The value the pointer names, or undefined when any step is missing. */
export function resolvePointer(doc: unknown, pointer: JsonPointer): unknown {
  let at: unknown = doc;
  for (const token of pointer) {
    if (Array.isArray(at)) {
      if (!ARRAY_INDEX.test(token)) return undefined;
      at = at[Number(token)];
    } else if (typeof at === "object" && at !== null) {
      if (!Object.hasOwn(at, token)) return undefined;
      at = (at as Record<string, unknown>)[token];
    } else {
      return undefined;
    }
  }
  return at;
}
