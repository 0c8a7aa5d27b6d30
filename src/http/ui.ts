import { Hono } from "hono";
import { access } from "../edge/access";
import type { AppEnv } from "../edge/app-env";
import { serveAsset } from "./assets";

/**
 * GET /ui: the thread inspector — an HTML page, one bundled script (src/ui, built by
 * scripts/build-assets.ts), one stylesheet and an icon, all static assets of this worker.
 * Outside /v1, so loading it needs no key; its API calls carry the key the user enters.
 */
export const uiRoutes = new Hono<AppEnv>();

/** Same-origin only: no inline script or style, no framing, no form posts elsewhere. */
export const INSPECTOR_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
  "object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const FILES: Record<string, string> = {
  "/ui": "/ui/index.html",
  "/ui/": "/ui/index.html",
  "/ui/inspector.js": "/ui/inspector.js",
  "/ui/inspector.css": "/ui/inspector.css",
  "/ui/favicon.svg": "/ui/favicon.svg",
};

for (const [route, file] of Object.entries(FILES)) uiRoutes.get(route, access("public"), (c) => serveAsset(c, file, INSPECTOR_CSP, "no-store"));
