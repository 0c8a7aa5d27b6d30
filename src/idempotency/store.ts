/**
 * Idempotency-Key records in D1 (table idempotency_keys, migration 0007), per API key (scopedKey).
 * Why D1 and not a Durable Object: the claim is one atomic INSERT … ON CONFLICT DO NOTHING
 * on the (tenant, key) primary key, which is all the mutual exclusion needed; replays and
 * expiry are plain reads/deletes; and a retry usually lands on another isolate, where D1 is
 * already bound, while a DO per key would add an object (and its cold start) per request.
 */
export const TTL_MS = 24 * 60 * 60 * 1000;

/**
 * The record's key: the API key's id, a space, the client's value. Records are per API key (the
 * primary key stays (tenant, key)); a value is printable ASCII without spaces, so the two never blur.
 */
export const scopedKey = (apiKeyId: string, value: string): string => `${apiKeyId} ${value}`;

/**
 * The most a record keeps of a result (its body and headers), under D1's 2,000,000 bytes a row with
 * room for the row's other columns (key, route, hash). Local D1 takes more; production refuses the
 * write, which left a claim without its result to lapse and the request to run again on a retry.
 */
export const MAX_KEPT_BYTES = 2_000_000 - 16_384;

/**
 * The most bytes of results (headers and bodies, UTF-8) a tenant's records keep at once
 * (MAX_IDEMPOTENCY_BYTES_PER_TENANT; triggers of migration 0021 keep the count in tenant_counts):
 * a member key at its rate limit could otherwise write ~240 MB a minute of them into the D1 database
 * every tenant shares. An unset or unreadable var means the documented default, never "unlimited".
 */
export const DEFAULT_TENANT_KEPT_BYTES = 268_435_456;
/**
 * The most one API key's records keep at once, under its tenant's cap (MAX_IDEMPOTENCY_BYTES_PER_KEY; migration 0025
 * counts it per key id): with the tenant's cap alone, one key (a member's) could fill it, and every other key's
 * results would go unkept for a day. A quarter of the tenant's by default.
 */
export const DEFAULT_KEY_KEPT_BYTES = 67_108_864;

/** The two caps a result is kept under: its tenant's and its key's. */
export type KeptBudget = { tenant: number; key: number };

const bytesVar = (raw: string | undefined, fallback: number): number => {
  const n = Number(raw);
  return raw !== undefined && raw !== "" && Number.isSafeInteger(n) && n >= 0 ? n : fallback;
};

export const keptBudget = (env: Env): KeptBudget => ({
  tenant: bytesVar(env.MAX_IDEMPOTENCY_BYTES_PER_TENANT, DEFAULT_TENANT_KEPT_BYTES),
  key: bytesVar(env.MAX_IDEMPOTENCY_BYTES_PER_KEY, DEFAULT_KEY_KEPT_BYTES),
});

/** The tenant_counts kind that counts one API key's kept bytes (migration 0025's triggers write it). */
const keyCountKind = (key: string): string => `idempotency_bytes:${key.slice(0, key.indexOf(" "))}`;

export type Stored = { status: number; headers: Record<string, string>; body: string };
/**
 * Why a finished record keeps no result, in its `headers` column (its `response` is NULL): `too_large`
 * for one row (or D1 refused the write; also a NULL `headers`, as records before migration 0021 have it),
 * `budget` when the tenant's records held MAX_IDEMPOTENCY_BYTES_PER_TENANT, `key_budget` when the calling
 * key's held MAX_IDEMPOTENCY_BYTES_PER_KEY.
 */
export type Unkept = "too_large" | "budget" | "key_budget";
const UNKEPT: readonly Unkept[] = ["too_large", "budget", "key_budget"];
const unkeptOf = (headers: string | null): Unkept => UNKEPT.find((w) => w === headers) ?? "too_large";
/** `unkept`: the request ran and ended with `status`, but its result was not kept (completeUnkept). */
export type Claim =
  | { kind: "owner" }
  | { kind: "done"; bodyHash: string; result: Stored }
  | { kind: "unkept"; bodyHash: string; status: number; why: Unkept }
  | { kind: "running"; bodyHash: string; leaseUntil: number };

type Row = { body_hash: string; status: number | null; headers: string | null; response: string | null; lease_until: number; expires_at: number };

/** Claims the key for this request, or says who has it. An expired record, or a crashed owner's lapsed lease, is taken over. */
export async function claim(db: D1Database, tenant: string, key: string, route: string, bodyHash: string, leaseMs: number, now = Date.now()): Promise<Claim> {
  const inserted = await db
    .prepare(
      `INSERT INTO idempotency_keys (tenant_id, key, route, body_hash, lease_until, expires_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
       ON CONFLICT (tenant_id, key) DO UPDATE SET route = excluded.route, body_hash = excluded.body_hash, status = NULL, headers = NULL,
         response = NULL, lease_until = excluded.lease_until, expires_at = excluded.expires_at
       WHERE idempotency_keys.expires_at < ?7 OR (idempotency_keys.status IS NULL AND idempotency_keys.lease_until < ?7)`,
    )
    .bind(tenant, key, route, bodyHash, now + leaseMs, now + TTL_MS, now)
    .run();
  if (inserted.meta.changes > 0) return { kind: "owner" };
  const row = await db
    .prepare(`SELECT body_hash, status, headers, response, lease_until, expires_at FROM idempotency_keys WHERE tenant_id = ? AND key = ?`)
    .bind(tenant, key)
    .first<Row>();
  if (!row) return claim(db, tenant, key, route, bodyHash, leaseMs, now); // released between the two statements
  if (row.status === null) return { kind: "running", bodyHash: row.body_hash, leaseUntil: row.lease_until };
  // complete() always writes a body (possibly ""): a finished record without one was not kept.
  if (row.response === null) return { kind: "unkept", bodyHash: row.body_hash, status: row.status, why: unkeptOf(row.headers) };
  return {
    kind: "done",
    bodyHash: row.body_hash,
    result: { status: row.status, headers: JSON.parse(row.headers ?? "{}") as Record<string, string>, body: row.response ?? "" },
  };
}

/**
 * Keeps the result if both the tenant's and the calling key's kept results have room for it (one statement:
 * the check and the write are atomic, so concurrent completions cannot overshoot). Without room, the tenant's
 * expired records are removed first (they stop counting), then it tries once more; still none: the record keeps
 * only that the request ran (`key_budget` when the key's cap is what it passes, else `budget`). Says whether the
 * result was kept.
 */
export async function complete(db: D1Database, tenant: string, key: string, result: Stored, budget: KeptBudget, now = Date.now()): Promise<boolean> {
  const headers = JSON.stringify(result.headers);
  const bytes = utf8Bytes(headers) + utf8Bytes(result.body);
  const held = (kind: string) => `ifnull((SELECT n FROM tenant_counts WHERE tenant_id = ?4 AND kind = ${kind}), 0)`;
  const keep = () =>
    db
      .prepare(
        `UPDATE idempotency_keys SET status = ?1, headers = ?2, response = ?3 WHERE tenant_id = ?4 AND key = ?5
         AND ${held("'idempotency_bytes'")} + ?6 <= ?7 AND ${held("?8")} + ?6 <= ?9`,
      )
      .bind(result.status, headers, result.body, tenant, key, bytes, budget.tenant, keyCountKind(key), budget.key)
      .run();
  if ((await keep()).meta.changes > 0) return true;
  await db.prepare(`DELETE FROM idempotency_keys WHERE tenant_id = ? AND expires_at < ?`).bind(tenant, now).run();
  if ((await keep()).meta.changes > 0) return true;
  const ofKey = await db.prepare(`SELECT n FROM tenant_counts WHERE tenant_id = ? AND kind = ?`).bind(tenant, keyCountKind(key)).first<{ n: number }>();
  await completeUnkept(db, tenant, key, result.status, (ofKey?.n ?? 0) + bytes > budget.key ? "key_budget" : "budget");
  return false;
}

export const utf8Bytes = (s: string): number => new TextEncoder().encode(s).byteLength;

/**
 * Marks the key as used by a request that ran and ended with `status` whose result is not kept (too large
 * for a row, or past the tenant's budget): a retry is told so (BEM-131) instead of running it again, and
 * the key is not released.
 */
export async function completeUnkept(db: D1Database, tenant: string, key: string, status: number, why: Unkept): Promise<void> {
  await db.prepare(`UPDATE idempotency_keys SET status = ?, headers = ?, response = NULL WHERE tenant_id = ? AND key = ?`).bind(status, why, tenant, key).run();
}

/** Extends a running claim (its holder is alive); a finished or taken-over record is left alone. */
export async function renew(db: D1Database, tenant: string, key: string, leaseMs: number, now = Date.now()): Promise<void> {
  await db
    .prepare(`UPDATE idempotency_keys SET lease_until = ? WHERE tenant_id = ? AND key = ? AND status IS NULL AND lease_until < ?`)
    .bind(now + leaseMs, tenant, key, now + leaseMs)
    .run();
}

/** Gives the key back (the request failed in a way a retry may fix): the next request runs. */
export async function release(db: D1Database, tenant: string, key: string): Promise<void> {
  await db.prepare(`DELETE FROM idempotency_keys WHERE tenant_id = ? AND key = ? AND status IS NULL`).bind(tenant, key).run();
}

export async function pruneExpired(db: D1Database, now = Date.now()): Promise<void> {
  await db.prepare(`DELETE FROM idempotency_keys WHERE expires_at < ?`).bind(now).run();
}
