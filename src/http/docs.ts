import { Scalar } from "@scalar/hono-api-reference";
import { Hono } from "hono";
import { access } from "./access";
import type { AppEnv } from "./app-env";

/**
 * GET /docs: the Scalar API reference over /openapi.json.
 * The package renders a page that loads its viewer script from cdn.jsdelivr.net (it
 * ships no self-hostable bundle), so the page says so and points at the raw document
 * for offline use. The inspector (/ui) has no such dependency.
 */
export const docsRoutes = new Hono<AppEnv>();

export const DOCS_CDN_NOTE =
  "This reference loads its viewer from cdn.jsdelivr.net. Offline, read the raw OpenAPI 3.1 document at /openapi.json.";

const reference = Scalar<AppEnv>({ url: "/openapi.json", pageTitle: "edgeweave API reference" });

// Shown without JavaScript or when the CDN script never arrives (Scalar replaces #app once it loads).
const note = `<noscript><p>${DOCS_CDN_NOTE}</p></noscript>\n    <div id="app"><p style="font:16px system-ui;margin:2rem">${DOCS_CDN_NOTE}</p></div>`;

docsRoutes.get("/docs", access("public"), async (c) => {
  const rendered = await reference(c, async () => {});
  if (!rendered) throw new Error("Scalar rendered nothing");
  const html = (await rendered.text()).replace('<div id="app"></div>', note);
  return c.html(html, 200, { "cache-control": "no-store" });
});
