import type { Context } from "hono";

/**
 * Sets a header on the response a handler already answered, in place. Hono's `c.header` after the
 * handler answered copies the whole Response first (a new Response per call, whatever its headers),
 * which cost a turn two copies (CORS's Vary and the request id). The responses this app answers are
 * built by Hono or by our handlers, so their headers are writable; one that is not (a fetch()
 * response passed through as is) takes Hono's copy.
 */
export function setOnResponse(c: Context, name: string, value: string, append = false): void {
  try {
    if (append) c.res.headers.append(name, value);
    else c.res.headers.set(name, value);
  } catch {
    c.header(name, value, append ? { append: true } : undefined);
  }
}
