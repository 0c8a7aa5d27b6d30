import { z } from "@hono/zod-openapi";
import { AppError } from "../core/errors";
import { DOT_SEGMENT_MESSAGE, isDotSegment } from "../core/path-segment";
import { hashKey, looksLikeApiKey, newApiKey, newKeyId } from "./keys";
import type { Principal } from "../core/principal";

/**
 * Tenant ids: like thread ids but without ':' — the thread object name is
 * `tenant:thread`, so a colon in a tenant id could collide with another tenant's thread.
 */
export const TenantId = z
  .string()
  .regex(/^[A-Za-z0-9._-]{1,64}$/, "1-64 characters of A-Z a-z 0-9 . _ -")
  .refine((id) => !isDotSegment(id), DOT_SEGMENT_MESSAGE)
  .openapi({ example: "acme" });

export const KeyRole = z.enum(["admin", "member"]);
export type KeyRole = z.infer<typeof KeyRole>;

export const Tenant = z.object({ id: z.string(), name: z.string().nullable(), created_at: z.number().int() }).openapi("Tenant");
export type Tenant = z.infer<typeof Tenant>;

/** A key as listed: never the key or its hash. */
export const ApiKeyInfo = z
  .object({
    id: z.string(),
    tenant: z.string(),
    role: KeyRole,
    scopes: z.array(z.string()),
    name: z.string().nullable(),
    created_at: z.number().int(),
    revoked_at: z.number().int().nullable(),
  })
  .openapi("ApiKey");
export type ApiKeyInfo = z.infer<typeof ApiKeyInfo>;

type KeyRow = { id: string; tenant_id: string; role: string; scopes: string; name: string | null; created_at: number; revoked_at: number | null };

const Scopes = z.array(z.string());
function scopesOf(json: string): string[] {
  // A malformed stored value grants nothing rather than failing the request.
  const parsed = Scopes.safeParse(safeJson(json));
  return parsed.success ? parsed.data : [];
}
function safeJson(s: string): unknown {
  try {
    return JSON.parse(s);
  } catch {
    return null;
  }
}

const toInfo = (r: KeyRow): ApiKeyInfo => ({
  id: r.id,
  tenant: r.tenant_id,
  role: KeyRole.parse(r.role),
  scopes: scopesOf(r.scopes),
  name: r.name,
  created_at: r.created_at,
  revoked_at: r.revoked_at,
});

const KEY_COLUMNS = "id, tenant_id, role, scopes, name, created_at, revoked_at";

export async function createTenant(db: D1Database, input: { id: string; name?: string | null }): Promise<Tenant> {
  const tenant: Tenant = { id: input.id, name: input.name ?? null, created_at: Date.now() };
  const res = await db
    .prepare("INSERT INTO tenants (id, name, created_at) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING")
    .bind(tenant.id, tenant.name, tenant.created_at)
    .run();
  if (res.meta.changes !== 1) throw new AppError("BEM-050", `Tenant '${input.id}' already exists`);
  return tenant;
}

/**
 * Tenants in id order, after the tenant `after` (a page's next_after; empty or absent: the first
 * page). An `after` that is no tenant is BEM-011: tenants are never deleted, so it was never handed
 * out, and read as a place to start it gave whatever sorted after it, an empty page for most. One
 * query, `id >= after`: its first row is `after` itself when that tenant exists.
 */
export async function listTenants(db: D1Database, opts: { limit: number; after?: string }): Promise<Tenant[]> {
  if (!opts.after) {
    const { results } = await db.prepare("SELECT id, name, created_at FROM tenants ORDER BY id LIMIT ?").bind(opts.limit).all<Tenant>();
    return results;
  }
  const { results } = await db
    .prepare("SELECT id, name, created_at FROM tenants WHERE id >= ? ORDER BY id LIMIT ?")
    .bind(opts.after, opts.limit + 1)
    .all<Tenant>();
  if (results[0]?.id !== opts.after) throw new AppError("BEM-011", `after: '${opts.after}' is no tenant id; pass the previous page's next_after`);
  return results.slice(1);
}

export async function requireTenant(db: D1Database, id: string): Promise<void> {
  const row = await db.prepare("SELECT 1 AS ok FROM tenants WHERE id = ?").bind(id).first();
  if (!row) throw new AppError("BEM-051", `Tenant '${id}' not found`);
}

/** Creates a key; the returned `key` is the only time it exists in clear. */
export async function createKey(
  db: D1Database,
  tenant: string,
  input: { role: KeyRole; scopes: string[]; name?: string | null },
): Promise<{ info: ApiKeyInfo; key: string }> {
  await requireTenant(db, tenant);
  const key = newApiKey();
  // Admins always hold the whole tenant; the stored list says so explicitly.
  const scopes = input.role === "admin" ? ["*"] : [...new Set(input.scopes)];
  const info: ApiKeyInfo = { id: newKeyId(), tenant, role: input.role, scopes, name: input.name ?? null, created_at: Date.now(), revoked_at: null };
  await db
    .prepare("INSERT INTO api_keys (id, tenant_id, key_hash, role, scopes, name, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)")
    .bind(info.id, tenant, await hashKey(key), info.role, JSON.stringify(scopes), info.name, info.created_at)
    .run();
  unknownKeys.delete(await hashKey(key)); // (a new random key cannot have been tried, but never let a stale miss hide it)
  return { info, key };
}

/** A page of the tenant's keys in creation order, after `after` (the page's last key). */
export async function listKeys(db: D1Database, tenant: string, limit: number, after?: { created_at: number; id: string }): Promise<ApiKeyInfo[]> {
  await requireTenant(db, tenant);
  const a = after ?? { created_at: -1, id: "" };
  const { results } = await db
    .prepare(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE tenant_id = ? AND (created_at, id) > (?, ?) ORDER BY created_at, id LIMIT ?`)
    .bind(tenant, a.created_at, a.id, limit)
    .all<KeyRow>();
  return results.map(toInfo);
}

/** Revokes a key of this tenant (idempotent: revoking twice keeps the first time). */
export async function revokeKey(db: D1Database, tenant: string, id: string): Promise<ApiKeyInfo> {
  const row = await db
    .prepare(`UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE tenant_id = ? AND id = ? RETURNING ${KEY_COLUMNS}`)
    .bind(Date.now(), tenant, id)
    .first<KeyRow>();
  if (!row) throw new AppError("BEM-052", "API key not found in this tenant");
  forgetCachedKey(id);
  return toInfo(row);
}

/**
 * Resolved keys, per isolate, by hash: saves a D1 round trip on every request.
 * A revoke clears the entry in the isolate that revoked it at once; other
 * isolates drop it within KEY_CACHE_MS.
 */
export const KEY_CACHE_MS = 10_000;
const keyCache = new Map<string, { principal: Principal; until: number; keyId: string }>();

/**
 * Well-formed keys that no tenant holds, by hash, for UNKNOWN_KEY_CACHE_MS: the same wrong key
 * sent again costs no D1 lookup. Safe because keys are 128-bit random and made only here (a key
 * cannot be presented before it exists; createKey clears its hash anyway).
 */
export const UNKNOWN_KEY_CACHE_MS = 10_000;
const unknownKeys = new Map<string, number>();

/** The principal of a key (`hash`: its hashKey) this isolate resolved within KEY_CACHE_MS, without asking D1. */
export function cachedPrincipalForKey(key: string, hash: string, now = Date.now()): Principal | null {
  if (!looksLikeApiKey(key)) return null;
  const cached = keyCache.get(hash);
  return cached && cached.until > now ? cached.principal : null;
}

/** The principal of a live tenant key (`hash`: its hashKey, computed once per request), or null for unknown and revoked keys. */
export async function principalForKey(db: D1Database, key: string, hash: string, now = Date.now()): Promise<Principal | null> {
  if (!looksLikeApiKey(key)) return null;
  const cached = keyCache.get(hash);
  if (cached && cached.until > now) return cached.principal;
  if ((unknownKeys.get(hash) ?? 0) > now) return null;
  const row = await db.prepare("SELECT id, tenant_id, role, scopes FROM api_keys WHERE key_hash = ? AND revoked_at IS NULL").bind(hash).first<PrincipalRow>();
  if (!row) {
    keyCache.delete(hash);
    if (unknownKeys.size > 10_000) unknownKeys.clear(); // bounded, like keyCache
    unknownKeys.set(hash, now + UNKNOWN_KEY_CACHE_MS);
    return null;
  }
  const principal = principalOf(row);
  if (keyCache.size > 10_000) keyCache.clear(); // bounded: a flood of keys cannot grow memory
  keyCache.set(hash, { principal, until: now + KEY_CACHE_MS, keyId: row.id });
  return principal;
}

type PrincipalRow = Pick<KeyRow, "id" | "tenant_id" | "role" | "scopes">;

function principalOf(row: PrincipalRow): Principal {
  const role = KeyRole.parse(row.role);
  return { kind: "tenant", tenant: row.tenant_id, role, keyId: row.id, grants: role === "admin" ? ["*"] : scopesOf(row.scopes) };
}

/**
 * The principal of a live key of this tenant, looked up by its id (not its secret) and never
 * cached: background work acting for a key asks who that is now, so a revoke stops it at once.
 */
export async function principalForKeyId(db: D1Database, tenant: string, id: string): Promise<Principal | null> {
  const row = await db
    .prepare("SELECT id, tenant_id, role, scopes FROM api_keys WHERE tenant_id = ? AND id = ? AND revoked_at IS NULL")
    .bind(tenant, id)
    .first<PrincipalRow>();
  return row ? principalOf(row) : null;
}

function forgetCachedKey(keyId: string): void {
  for (const [hash, entry] of keyCache) if (entry.keyId === keyId) keyCache.delete(hash);
}
