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

export type Stored = { status: number; headers: Record<string, string>; body: string };
/** `unkept`: the request ran and ended with `status`, but its result was too large to keep (completeUnkept). */
export type Claim =
  | { kind: "owner" }
  | { kind: "done"; bodyHash: string; result: Stored }
  | { kind: "unkept"; bodyHash: string; status: number }
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
  // complete() always writes a body (possibly ""): a finished record without one was too large to keep.
  if (row.response === null) return { kind: "unkept", bodyHash: row.body_hash, status: row.status };
  return {
    kind: "done",
    bodyHash: row.body_hash,
    result: { status: row.status, headers: JSON.parse(row.headers ?? "{}") as Record<string, string>, body: row.response ?? "" },
  };
}

export async function complete(db: D1Database, tenant: string, key: string, result: Stored): Promise<void> {
  await db
    .prepare(`UPDATE idempotency_keys SET status = ?, headers = ?, response = ? WHERE tenant_id = ? AND key = ?`)
    .bind(result.status, JSON.stringify(result.headers), result.body, tenant, key)
    .run();
}

/**
 * Marks the key as used by a request that ran and ended with `status` whose result is not kept (too large
 * for a row): a retry is told so (BEM-131) instead of running it again, and the key is not released.
 */
export async function completeUnkept(db: D1Database, tenant: string, key: string, status: number): Promise<void> {
  await db.prepare(`UPDATE idempotency_keys SET status = ?, headers = NULL, response = NULL WHERE tenant_id = ? AND key = ?`).bind(status, tenant, key).run();
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
