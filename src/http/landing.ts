import { access } from "../edge/access";
import { Hono } from "hono";
import type { AppEnv } from "../edge/app-env";
import { serveAsset } from "./assets";

/** GET /: a small page linking to the inspector, the reference, the OpenAPI document and /health, with its stylesheet. */
export const landingRoutes = new Hono<AppEnv>();

const LANDING_CSP = "default-src 'none'; img-src 'self'; style-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

landingRoutes.get("/", access("public"), (c) => serveAsset(c, "/index.html", LANDING_CSP));
landingRoutes.get("/landing.css", access("public"), (c) => serveAsset(c, "/landing.css", LANDING_CSP));
