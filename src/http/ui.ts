import { type Context, Hono } from "hono";
import { INSPECTOR_HTML, INSPECTOR_ICON } from "../ui/page";
import { INSPECTOR_JS } from "../ui/script";
import { INSPECTOR_CSS } from "../ui/style";
import { access } from "./access";
import type { AppEnv } from "./app-env";

/**
 * GET /ui: the thread inspector (HTML, one script, one stylesheet, all from this worker).
 * Outside /v1, so loading it needs no key; its API calls carry the key the user enters.
 */
export const uiRoutes = new Hono<AppEnv>();

/** Same-origin only: no inline script or style, no framing, no form posts elsewhere. */
export const INSPECTOR_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
  "object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const headers = (contentType: string): Record<string, string> => ({
  "content-type": contentType,
  "content-security-policy": INSPECTOR_CSP,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "cache-control": "no-store",
});

const page = (c: Context<AppEnv>) => c.body(INSPECTOR_HTML, 200, headers("text/html; charset=utf-8"));

uiRoutes.get("/ui", access("public"), page);
uiRoutes.get("/ui/", access("public"), page);
uiRoutes.get("/ui/inspector.js", access("public"), (c) => c.body(INSPECTOR_JS, 200, headers("text/javascript; charset=utf-8")));
uiRoutes.get("/ui/inspector.css", access("public"), (c) => c.body(INSPECTOR_CSS, 200, headers("text/css; charset=utf-8")));
uiRoutes.get("/ui/favicon.svg", access("public"), (c) => c.body(INSPECTOR_ICON, 200, headers("image/svg+xml")));
