-- A scope whose last fact goes (forgotten, or purged once expired) gives its fact_scope_stats row back, and with it
-- its span of facts_fts rowids (migration 0018): no facts_fts row of the scope is left by then, and the next new scope
-- of the tenant may take the span again. Rows and spans had stayed for good, so a key with a wildcard grant
-- (docset:*, session:*) that remembered and forgot a fact in ever new scopes spent them without end (2^27 spans
-- for every tenant together). The trigger is 0018's with the DELETE added.
DROP TRIGGER facts_after_delete;
CREATE TRIGGER facts_after_delete AFTER DELETE ON facts BEGIN DELETE FROM facts_fts WHERE rowid = (SELECT span FROM fact_scope_stats WHERE tenant_id = old.tenant_id AND scope = old.scope) * 68719476736 + old.rowid; DELETE FROM fact_versions WHERE fact_id = old.id; UPDATE fact_scope_stats SET n = n - 1, tokens = tokens - old.tokens WHERE tenant_id = old.tenant_id AND scope = old.scope; DELETE FROM fact_scope_stats WHERE tenant_id = old.tenant_id AND scope = old.scope AND n = 0; END;
DELETE FROM fact_scope_stats WHERE n = 0
  AND NOT EXISTS (SELECT 1 FROM facts f WHERE f.tenant_id = fact_scope_stats.tenant_id AND f.scope = fact_scope_stats.scope);
