-- A fact search matches inside the searched scopes' rows of facts_fts only. facts_fts is one FTS5
-- index for every tenant, and a MATCH walked every row holding the word, whoever's fact it was, then
-- dropped the other tenants' at the join: the search cost grew with facts the caller may not read, and
-- its time told how many of them hold its words. Now each (tenant, scope) owns a span of rowids,
-- facts_fts.rowid = span * 2^36 + facts.rowid, and a search gives FTS5 its scopes' rowid ranges,
-- which it seeks to in each segment and stops at the end of (src/memory/bm25-search.ts).
--
-- A scope's span is allocated when its first fact is written: the next one in its tenant's newest
-- block of 32, or the first of a new block past every span, so a tenant's scopes sit together and a
-- search over all of them (MCP recall by grants) is about one range per 32 scopes. Limits: 2^27 spans
-- (4 million blocks) and facts.rowid < 2^36; past either a fact write fails loudly, never silently.

-- Every scope with facts has its stats row (0005 made them; this covers a row the triggers missed).
INSERT INTO fact_scope_stats (tenant_id, scope, n, tokens)
  SELECT tenant_id, scope, COUNT(*), SUM(tokens) FROM facts f
  WHERE NOT EXISTS (SELECT 1 FROM fact_scope_stats s WHERE s.tenant_id = f.tenant_id AND s.scope = f.scope) GROUP BY tenant_id, scope;
ALTER TABLE fact_scope_stats ADD COLUMN span INTEGER NOT NULL DEFAULT 0;
-- Existing scopes: each tenant gets as many blocks as its scopes fill, one after another, from span 32.
UPDATE fact_scope_stats SET span = x.span FROM (
  SELECT s.tenant_id, s.scope, 32 * (1 + t.before) + s.i AS span
  FROM (SELECT tenant_id, scope, ROW_NUMBER() OVER (PARTITION BY tenant_id ORDER BY scope) - 1 AS i FROM fact_scope_stats) s
  JOIN (SELECT tenant_id, SUM(blocks) OVER (ORDER BY tenant_id) - blocks AS before FROM (SELECT tenant_id, (COUNT(*) + 31) / 32 AS blocks FROM fact_scope_stats GROUP BY tenant_id)) t
  USING (tenant_id)
) x WHERE x.tenant_id = fact_scope_stats.tenant_id AND x.scope = fact_scope_stats.scope;
CREATE UNIQUE INDEX fact_scope_stats_by_span ON fact_scope_stats (span);
CREATE INDEX fact_scope_stats_by_tenant_span ON fact_scope_stats (tenant_id, span);

DROP TRIGGER facts_after_insert;
DROP TRIGGER facts_after_delete;
DROP TRIGGER facts_after_text_update;
DROP TABLE facts_fts;
CREATE VIRTUAL TABLE facts_fts USING fts5(text, tokenize = 'porter unicode61 remove_diacritics 2');
INSERT INTO facts_fts (rowid, text)
  SELECT s.span * 68719476736 + f.rowid, f.text FROM facts f JOIN fact_scope_stats s ON s.tenant_id = f.tenant_id AND s.scope = f.scope ORDER BY 1;

CREATE TRIGGER facts_after_insert AFTER INSERT ON facts BEGIN INSERT INTO fact_scope_stats (tenant_id, scope, n, tokens, span) SELECT new.tenant_id, new.scope, 0, 0, CASE WHEN last % 32 < 31 THEN last + 1 ELSE (SELECT COALESCE(MAX(span), -1) FROM fact_scope_stats) / 32 * 32 + 32 END FROM (SELECT COALESCE(MAX(span), 31) AS last FROM fact_scope_stats WHERE tenant_id = new.tenant_id) WHERE NOT EXISTS (SELECT 1 FROM fact_scope_stats WHERE tenant_id = new.tenant_id AND scope = new.scope); UPDATE fact_scope_stats SET n = n + 1, tokens = tokens + new.tokens WHERE tenant_id = new.tenant_id AND scope = new.scope; SELECT RAISE(ABORT, 'facts_fts: facts.rowid or the scope span is past its range (migrations/0018)') FROM fact_scope_stats WHERE tenant_id = new.tenant_id AND scope = new.scope AND (new.rowid >= 68719476736 OR span >= 134217728); INSERT INTO facts_fts (rowid, text) SELECT span * 68719476736 + new.rowid, new.text FROM fact_scope_stats WHERE tenant_id = new.tenant_id AND scope = new.scope; END;
CREATE TRIGGER facts_after_delete AFTER DELETE ON facts BEGIN DELETE FROM facts_fts WHERE rowid = (SELECT span FROM fact_scope_stats WHERE tenant_id = old.tenant_id AND scope = old.scope) * 68719476736 + old.rowid; DELETE FROM fact_versions WHERE fact_id = old.id; UPDATE fact_scope_stats SET n = n - 1, tokens = tokens - old.tokens WHERE tenant_id = old.tenant_id AND scope = old.scope; END;
CREATE TRIGGER facts_after_text_update AFTER UPDATE OF text ON facts BEGIN INSERT INTO fact_versions (fact_id, version, tenant_id, kind, text, written_at, replaced_at) VALUES (old.id, old.version, old.tenant_id, old.kind, old.text, old.updated_at, new.updated_at); DELETE FROM facts_fts WHERE rowid = (SELECT span FROM fact_scope_stats WHERE tenant_id = old.tenant_id AND scope = old.scope) * 68719476736 + old.rowid; INSERT INTO facts_fts (rowid, text) SELECT span * 68719476736 + new.rowid, new.text FROM fact_scope_stats WHERE tenant_id = new.tenant_id AND scope = new.scope; UPDATE fact_scope_stats SET tokens = tokens + new.tokens - old.tokens WHERE tenant_id = new.tenant_id AND scope = new.scope; END;
