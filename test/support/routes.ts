import { app } from "../../src/http/app";
import { declaredBy, type Declared } from "../../src/edge/access";

export type AppRoute = { method: string; path: string; declared: Declared | undefined };

/**
 * Every concrete route of the app (method + Hono path), read from `app.routes`, with the
 * access and body limit declared on it — undefined when a route declares none.
 */
export function appRoutes(): AppRoute[] {
  const byRoute = new Map<string, AppRoute>();
  for (const r of app.routes) {
    if (r.method === "ALL") continue;
    const key = `${r.method} ${r.path}`;
    const entry = byRoute.get(key) ?? { method: r.method, path: r.path, declared: undefined };
    entry.declared ??= declaredBy(r.handler);
    byRoute.set(key, entry);
  }
  return [...byRoute.values()];
}

/** The declaration of one route, by method and OpenAPI-style or Hono-style path. */
export function declaredFor(method: string, path: string): Declared | undefined {
  const hono = path.replace(/\{([^}]+)\}/g, ":$1");
  return appRoutes().find((r) => r.method === method.toUpperCase() && r.path === hono)?.declared;
}
