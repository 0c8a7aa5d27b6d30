-- Loading a scope's facts reads no more than it keeps (issue 16 item 2): whether the scope fits is
-- decided from fact_scope_stats less the expired facts the hourly purge has not removed yet. That
-- count used facts_by_recency (tenant_id, scope) — every fact of the scope, on every turn. This
-- index makes it read only the scope's expiring rows.
CREATE INDEX facts_expiring ON facts (tenant_id, scope, expires_at) WHERE expires_at IS NOT NULL;
