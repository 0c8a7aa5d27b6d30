import { Hono } from "hono";
import { access } from "../edge/access";
import type { AppEnv } from "../edge/app-env";
import { serveAsset } from "./assets";

/**
 * GET /docs: the API reference over /openapi.json, rendered by Scalar's viewer. The viewer
 * is the pinned @scalar/api-reference bundle, copied into the static assets at build time
 * (scripts/build-assets.ts) and served from this origin, so the page works offline and
 * loads nothing from another origin.
 */
export const docsRoutes = new Hono<AppEnv>();

/**
 * Scripts only from this origin. The viewer injects its styles at run time (hence inline
 * styles) and renders images from data: URLs; it fetches only /openapi.json (and, from its
 * "try it" client, this origin's API).
 */
export const DOCS_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; " +
  "connect-src 'self'; worker-src 'self' blob:; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

docsRoutes.get("/docs", access("public"), (c) => serveAsset(c, "/docs/index.html", DOCS_CSP));
docsRoutes.get("/docs/init.js", access("public"), (c) => serveAsset(c, "/docs/init.js", DOCS_CSP));
docsRoutes.get("/docs/scalar.js", access("public"), (c) => serveAsset(c, "/docs/scalar.js", DOCS_CSP));
