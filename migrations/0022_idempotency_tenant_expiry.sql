-- A tenant's expired Idempotency-Key records are removed when its kept results reach
-- MAX_IDEMPOTENCY_BYTES_PER_TENANT (src/idempotency/store.ts complete): this index makes that DELETE read only
-- the expired rows, not every record the tenant holds.
CREATE INDEX idempotency_keys_tenant_expiry ON idempotency_keys (tenant_id, expires_at);
