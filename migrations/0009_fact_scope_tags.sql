-- Loading and recall cost O(what they keep), not O(facts in the scope) (issue 16 item 2).
-- 1. A per-scope tag token in the full-text index: a search ANDs its words with the scope's tag,
--    so FTS5 walks this scope's postings only, newest first, and stops after a bounded window.
-- 2. The count of expired-but-not-yet-purged facts reads only those rows (was: the whole scope).

-- The tag: 's' || tag is one token per (tenant, scope), assigned when the scope gets its first fact.
ALTER TABLE fact_scope_stats ADD COLUMN tag INTEGER;
UPDATE fact_scope_stats SET tag = rowid;
CREATE UNIQUE INDEX fact_scope_stats_by_tag ON fact_scope_stats (tag);

CREATE INDEX facts_expiring ON facts (tenant_id, scope, expires_at) WHERE expires_at IS NOT NULL;

DROP TRIGGER facts_after_insert;
DROP TRIGGER facts_after_delete;
DROP TRIGGER facts_after_text_update;
DROP TABLE facts_fts;
-- text: the fact's words (ranked); tag: its scope's token (filter only). rowid = -facts.rowid: FTS5 walks
-- a doclist forward with skips but backwards linearly, so "newest matches first" is ascending order here.
CREATE VIRTUAL TABLE facts_fts USING fts5(text, tag, tokenize = 'unicode61 remove_diacritics 2');
-- Ascending FTS rowids: FTS5 flushes its pending terms whenever a rowid is lower than the last one written.
INSERT INTO facts_fts (rowid, text, tag) SELECT -f.rowid, f.text, 's' || s.tag FROM facts f JOIN fact_scope_stats s ON s.tenant_id = f.tenant_id AND s.scope = f.scope ORDER BY f.rowid DESC;

CREATE TRIGGER facts_after_insert AFTER INSERT ON facts BEGIN INSERT OR IGNORE INTO fact_scope_stats (tenant_id, scope, n, tokens, tag) VALUES (new.tenant_id, new.scope, 0, 0, (SELECT COALESCE(MAX(tag), 0) + 1 FROM fact_scope_stats)); UPDATE fact_scope_stats SET n = n + 1, tokens = tokens + new.tokens WHERE tenant_id = new.tenant_id AND scope = new.scope; INSERT INTO facts_fts (rowid, text, tag) VALUES (-new.rowid, new.text, (SELECT 's' || tag FROM fact_scope_stats WHERE tenant_id = new.tenant_id AND scope = new.scope)); END;
CREATE TRIGGER facts_after_delete AFTER DELETE ON facts BEGIN DELETE FROM facts_fts WHERE rowid = -old.rowid; DELETE FROM fact_versions WHERE fact_id = old.id; UPDATE fact_scope_stats SET n = n - 1, tokens = tokens - old.tokens WHERE tenant_id = old.tenant_id AND scope = old.scope; END;
CREATE TRIGGER facts_after_text_update AFTER UPDATE OF text ON facts BEGIN INSERT INTO fact_versions (fact_id, version, tenant_id, kind, text, written_at, replaced_at) VALUES (old.id, old.version, old.tenant_id, old.kind, old.text, old.updated_at, new.updated_at); DELETE FROM facts_fts WHERE rowid = -old.rowid; INSERT INTO facts_fts (rowid, text, tag) VALUES (-new.rowid, new.text, (SELECT 's' || tag FROM fact_scope_stats WHERE tenant_id = new.tenant_id AND scope = new.scope)); UPDATE fact_scope_stats SET tokens = tokens + new.tokens - old.tokens WHERE tenant_id = new.tenant_id AND scope = new.scope; END;
