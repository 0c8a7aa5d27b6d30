-- Memory the agent manages: keyed facts with history, expiry, full-text ranking.
-- Triggers keep the derived tables (versions, full-text index, per-scope counts) in step with
-- facts, whichever code path writes it (API, tools, tasks, the expiry purge).

ALTER TABLE facts ADD COLUMN key TEXT;
ALTER TABLE facts ADD COLUMN expires_at INTEGER;
ALTER TABLE facts ADD COLUMN updated_at INTEGER;
ALTER TABLE facts ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
UPDATE facts SET updated_at = created_at;
CREATE UNIQUE INDEX facts_by_key ON facts (tenant_id, scope, key) WHERE key IS NOT NULL;
CREATE INDEX facts_by_kind ON facts (tenant_id, scope, kind, created_at, id);
CREATE INDEX facts_by_recency ON facts (tenant_id, scope, updated_at, id);
CREATE INDEX facts_by_expiry ON facts (expires_at) WHERE expires_at IS NOT NULL;

-- Earlier versions of a keyed fact, written when remembering with its key replaced the text.
CREATE TABLE fact_versions (
  fact_id     TEXT NOT NULL,
  version     INTEGER NOT NULL,
  tenant_id   TEXT NOT NULL,
  kind        TEXT NOT NULL,
  text        TEXT NOT NULL,
  written_at  INTEGER NOT NULL,           -- when this version was remembered
  replaced_at INTEGER NOT NULL,
  PRIMARY KEY (fact_id, version)
);

-- Fact count and token sum per scope: whether a scope fits its share, and how many facts did not,
-- cost O(1), not O(facts in the scope).
CREATE TABLE fact_scope_stats (
  tenant_id   TEXT NOT NULL,
  scope       TEXT NOT NULL,
  n           INTEGER NOT NULL,
  tokens      INTEGER NOT NULL,
  PRIMARY KEY (tenant_id, scope)
);
INSERT INTO fact_scope_stats (tenant_id, scope, n, tokens) SELECT tenant_id, scope, COUNT(*), SUM(tokens) FROM facts GROUP BY tenant_id, scope;

-- BM25 over fact text (rowid = facts.rowid); searches join back to facts for tenant, scope and expiry.
CREATE VIRTUAL TABLE facts_fts USING fts5(text, tokenize = 'unicode61 remove_diacritics 2');
INSERT INTO facts_fts (rowid, text) SELECT rowid, text FROM facts;

CREATE TRIGGER facts_after_insert AFTER INSERT ON facts BEGIN INSERT INTO facts_fts (rowid, text) VALUES (new.rowid, new.text); INSERT OR IGNORE INTO fact_scope_stats (tenant_id, scope, n, tokens) VALUES (new.tenant_id, new.scope, 0, 0); UPDATE fact_scope_stats SET n = n + 1, tokens = tokens + new.tokens WHERE tenant_id = new.tenant_id AND scope = new.scope; END;
CREATE TRIGGER facts_after_delete AFTER DELETE ON facts BEGIN DELETE FROM facts_fts WHERE rowid = old.rowid; DELETE FROM fact_versions WHERE fact_id = old.id; UPDATE fact_scope_stats SET n = n - 1, tokens = tokens - old.tokens WHERE tenant_id = old.tenant_id AND scope = old.scope; END;
CREATE TRIGGER facts_after_text_update AFTER UPDATE OF text ON facts BEGIN INSERT INTO fact_versions (fact_id, version, tenant_id, kind, text, written_at, replaced_at) VALUES (old.id, old.version, old.tenant_id, old.kind, old.text, old.updated_at, new.updated_at); DELETE FROM facts_fts WHERE rowid = old.rowid; INSERT INTO facts_fts (rowid, text) VALUES (new.rowid, new.text); UPDATE fact_scope_stats SET tokens = tokens + new.tokens - old.tokens WHERE tenant_id = new.tenant_id AND scope = new.scope; END;
