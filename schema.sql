-- edgeweave D1 schema: the one source. migrations/ must produce exactly this
-- (test/schema.test.ts compares them); every tenant-owned row carries tenant_id.

CREATE TABLE tenants (
  id          TEXT PRIMARY KEY,
  name        TEXT,
  created_at  INTEGER NOT NULL
);

CREATE TABLE api_keys (
  id          TEXT PRIMARY KEY,
  tenant_id   TEXT NOT NULL REFERENCES tenants(id),
  key_hash    TEXT NOT NULL UNIQUE,       -- hex SHA-256 of the key; the key itself is never stored
  role        TEXT NOT NULL CHECK (role IN ('admin', 'member')),
  scopes      TEXT NOT NULL DEFAULT '[]', -- JSON array of granted scope patterns
  name        TEXT,
  created_at  INTEGER NOT NULL,
  revoked_at  INTEGER
);
CREATE INDEX api_keys_tenant ON api_keys (tenant_id);

-- Facts of every scope. tenant_id '' is the operator-wide system scope.
CREATE TABLE facts (
  id          TEXT PRIMARY KEY,
  tenant_id   TEXT NOT NULL,
  scope       TEXT NOT NULL,              -- "name" or "name:id"
  kind        TEXT NOT NULL,
  text        TEXT NOT NULL,
  tokens      INTEGER NOT NULL,
  created_at  INTEGER NOT NULL
  -- Added by migration 0005 with ALTER TABLE, whose text SQLite keeps as written, hence this layout.
  -- key: unique per scope (remembering with it replaces the text), expires_at: ms, never loaded after,
  -- updated_at: when the text was last written (recency), version: 1 + replacements.
  -- text_hash (0028): SHA-256 of the normalised text; facts without a key are unique by it per scope.
  -- written_by (0029): operator | admin | member | webhook | model | unknown (before 0029); see facts.ts.
  -- vec, vec_by (0030): the text's vector for ranking by meaning and the embedder that made it (NULL: embedded when read).
  -- fts_text (0031): the text as facts_fts indexes it, each word behind the tenant's mark (tenant-words.ts).
, key TEXT, expires_at INTEGER, updated_at INTEGER, version INTEGER NOT NULL DEFAULT 1, text_hash TEXT, written_by TEXT NOT NULL DEFAULT 'unknown', vec BLOB, vec_by TEXT, fts_text TEXT);
CREATE INDEX facts_by_scope ON facts (tenant_id, scope, created_at, id);
CREATE UNIQUE INDEX facts_by_key ON facts (tenant_id, scope, key) WHERE key IS NOT NULL;
CREATE UNIQUE INDEX facts_by_text ON facts (tenant_id, scope, text_hash) WHERE key IS NULL;
CREATE INDEX facts_unhashed ON facts (tenant_id) WHERE text_hash IS NULL;
CREATE INDEX facts_unmarked ON facts (tenant_id) WHERE fts_text IS NULL;
CREATE INDEX facts_by_kind ON facts (tenant_id, scope, kind, created_at, id);
CREATE INDEX facts_by_recency ON facts (tenant_id, scope, updated_at, id);
CREATE INDEX facts_by_expiry ON facts (expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX facts_expiring ON facts (tenant_id, scope, expires_at) WHERE expires_at IS NOT NULL;

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
-- cost O(1), not O(facts in the scope). A scope's row goes with its last fact (facts_after_delete, 0026).
CREATE TABLE fact_scope_stats (
  tenant_id   TEXT NOT NULL,
  scope       TEXT NOT NULL,
  n           INTEGER NOT NULL,
  -- span, added by migration 0018 (ALTER TABLE, hence the layout): the scope's slice of facts_fts rowids,
  -- allocated by facts_after_insert (0 is no scope's: spans start at 32).
  tokens      INTEGER NOT NULL, span INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (tenant_id, scope)
);
CREATE UNIQUE INDEX fact_scope_stats_by_span ON fact_scope_stats (span);
CREATE INDEX fact_scope_stats_by_tenant_span ON fact_scope_stats (tenant_id, span);

-- Fact text for BM25 search: rowid = the scope's span * 2^36 + facts.rowid (0018), so a search matches
-- inside its scopes' rowid ranges only; it joins back to facts for tenant, scope and expiry. It indexes
-- fts_text, each word behind its tenant's mark (0031), so no query reads another tenant's terms. Marks (category M)
-- are word characters (0035): Devanagari's and Tamil's vowel signs are inside a word.
CREATE VIRTUAL TABLE facts_fts USING fts5(text, tokenize = 'porter unicode61 remove_diacritics 2 categories ''L* N* Co M*''');

CREATE TRIGGER facts_after_insert AFTER INSERT ON facts BEGIN INSERT INTO fact_scope_stats (tenant_id, scope, n, tokens, span) SELECT new.tenant_id, new.scope, 0, 0, CASE WHEN last % 32 < 31 THEN last + 1 ELSE (SELECT COALESCE(MAX(span), -1) FROM fact_scope_stats) / 32 * 32 + 32 END FROM (SELECT COALESCE(MAX(span), 31) AS last FROM fact_scope_stats WHERE tenant_id = new.tenant_id) WHERE NOT EXISTS (SELECT 1 FROM fact_scope_stats WHERE tenant_id = new.tenant_id AND scope = new.scope); UPDATE fact_scope_stats SET n = n + 1, tokens = tokens + new.tokens WHERE tenant_id = new.tenant_id AND scope = new.scope; SELECT RAISE(ABORT, 'facts_fts: facts.rowid or the scope span is past its range (migrations/0018)') FROM fact_scope_stats WHERE tenant_id = new.tenant_id AND scope = new.scope AND (new.rowid >= 68719476736 OR span >= 134217728); INSERT INTO facts_fts (rowid, text) SELECT span * 68719476736 + new.rowid, new.fts_text FROM fact_scope_stats WHERE tenant_id = new.tenant_id AND scope = new.scope; END;
CREATE TRIGGER facts_after_delete AFTER DELETE ON facts BEGIN DELETE FROM facts_fts WHERE rowid = (SELECT span FROM fact_scope_stats WHERE tenant_id = old.tenant_id AND scope = old.scope) * 68719476736 + old.rowid; DELETE FROM fact_versions WHERE fact_id = old.id; UPDATE fact_scope_stats SET n = n - 1, tokens = tokens - old.tokens WHERE tenant_id = old.tenant_id AND scope = old.scope; DELETE FROM fact_scope_stats WHERE tenant_id = old.tenant_id AND scope = old.scope AND n = 0; END;
CREATE TRIGGER facts_after_text_update AFTER UPDATE OF text ON facts BEGIN INSERT INTO fact_versions (fact_id, version, tenant_id, kind, text, written_at, replaced_at) VALUES (old.id, old.version, old.tenant_id, old.kind, old.text, old.updated_at, new.updated_at); DELETE FROM fact_versions WHERE fact_id = old.id AND version <= old.version - 20; UPDATE fact_scope_stats SET tokens = tokens + new.tokens - old.tokens WHERE tenant_id = new.tenant_id AND scope = new.scope; END;
CREATE TRIGGER facts_after_fts_text_update AFTER UPDATE OF fts_text ON facts BEGIN DELETE FROM facts_fts WHERE rowid = (SELECT span FROM fact_scope_stats WHERE tenant_id = old.tenant_id AND scope = old.scope) * 68719476736 + old.rowid; INSERT INTO facts_fts (rowid, text) SELECT span * 68719476736 + new.rowid, new.fts_text FROM fact_scope_stats WHERE tenant_id = new.tenant_id AND scope = new.scope; END;

-- Threads a tenant has touched, for listing (the DO holds the content).
CREATE TABLE threads (
  tenant_id   TEXT NOT NULL,
  thread_id   TEXT NOT NULL,
  created_at  INTEGER NOT NULL,
  updated_at  INTEGER NOT NULL,
  kind        TEXT NOT NULL DEFAULT 'conversation', -- conversation | response (a one-off Responses call's thread)
  expires_at  INTEGER,                              -- a response thread's: 30 days after its last write (the cron deletes it)
  metadata    TEXT, -- 0030: LangGraph thread metadata (JSON object; NULL when none)
  PRIMARY KEY (tenant_id, thread_id)
);
CREATE INDEX threads_by_update ON threads (tenant_id, updated_at, thread_id);
CREATE INDEX threads_expiring ON threads (expires_at) WHERE expires_at IS NOT NULL;

CREATE TABLE usage (
  tenant_id         TEXT NOT NULL,
  day               TEXT NOT NULL,        -- YYYY-MM-DD (UTC)
  model             TEXT NOT NULL,
  cause             TEXT NOT NULL DEFAULT 'turn', -- turn | webhook | summarization | summarize_task | extraction
  requests          INTEGER NOT NULL DEFAULT 0,
  prompt_tokens     INTEGER NOT NULL DEFAULT 0,
  completion_tokens INTEGER NOT NULL DEFAULT 0,
  cost              REAL NOT NULL DEFAULT 0,
  estimated_requests INTEGER NOT NULL DEFAULT 0, -- requests whose tokens were estimated (no usage reported: a cut stream, a provider without usage)
  PRIMARY KEY (tenant_id, day, model, cause)
);

-- 0017: a thread object's newest send of its runs' bookkeeping (src/object/bookkeeping-flush.ts): a send's
-- usage adds in only if the send moved this row forward in the same batch, so a retried send adds nothing twice.
CREATE TABLE bookkeeping_sends (
  sender  TEXT PRIMARY KEY,   -- one incarnation of a thread object (a random id it keeps in its own storage)
  seq     INTEGER NOT NULL,   -- its newest send that landed
  attempt TEXT NOT NULL,      -- the try of that send that wrote it
  sent_at INTEGER NOT NULL    -- unix ms; the hourly cron removes rows a day old
);

CREATE TABLE webhooks (
  id            TEXT PRIMARY KEY,
  tenant_id     TEXT NOT NULL,
  name          TEXT NOT NULL,
  agent_name    TEXT NOT NULL,
  thread_from   TEXT NOT NULL,
  text_from     TEXT NOT NULL,
  callback_url  TEXT,
  secret        TEXT NOT NULL,            -- HMAC key; needed in clear to verify signatures
  created_at    INTEGER NOT NULL
  -- 0004: the JSON grant patterns given at registration; 1 = may run agents that rewrite stored history
  -- 0012: write_facts 1 = deliveries may write facts within the hook's grants
  , grants TEXT NOT NULL DEFAULT '[]', rewrite_history INTEGER NOT NULL DEFAULT 0, write_facts INTEGER NOT NULL DEFAULT 0);
CREATE INDEX webhooks_tenant ON webhooks (tenant_id);

-- One row per accepted delivery; the primary key makes repeats (even concurrent ones) no-ops.
CREATE TABLE webhook_deliveries (
  webhook_id    TEXT NOT NULL,
  delivery_id   TEXT NOT NULL,            -- X-Edgeweave-Delivery, or hex SHA-256 of the body
  tenant_id     TEXT NOT NULL,
  thread_id     TEXT NOT NULL,
  input         TEXT NOT NULL,            -- the text taken from the payload (too big for a queue message)
  status        TEXT NOT NULL,            -- accepted | replied | done | failed
  result        TEXT,                     -- JSON summary of the run (reply, model, callback outcome)
  created_at    INTEGER NOT NULL,
  updated_at    INTEGER NOT NULL,
  PRIMARY KEY (webhook_id, delivery_id)
);
-- The hourly cron removes records 30 days after their last change (migration 0020).
CREATE INDEX webhook_deliveries_updated ON webhook_deliveries (updated_at);

-- Signed requests seen within the replay window: the same signature twice is a replay,
-- whatever X-Edgeweave-Delivery says. Rows older than the window are pruned.
CREATE TABLE webhook_signatures (
  webhook_id    TEXT NOT NULL,
  signature     TEXT NOT NULL,
  delivery_id   TEXT NOT NULL,
  created_at    INTEGER NOT NULL,
  PRIMARY KEY (webhook_id, signature)
);

CREATE TABLE tasks_done (
  task_id       TEXT PRIMARY KEY,
  tenant_id     TEXT NOT NULL,
  kind          TEXT NOT NULL,
  result        TEXT,
  created_at    INTEGER NOT NULL
);
-- The hourly cron removes task records 30 days after they were written (migration 0023).
CREATE INDEX tasks_done_created ON tasks_done (created_at);

CREATE TABLE dead_letters (
  id            TEXT PRIMARY KEY,
  tenant_id     TEXT NOT NULL,            -- '' when the task was too malformed to name one
  task_id       TEXT,
  kind          TEXT,
  body          TEXT NOT NULL,
  reason        TEXT NOT NULL,
  attempts      INTEGER NOT NULL,
  created_at    INTEGER NOT NULL
);
CREATE INDEX dead_letters_tenant ON dead_letters (tenant_id, created_at, id);
CREATE INDEX dead_letters_created ON dead_letters (created_at);

-- A stored response: a checkpoint of one of the tenant's threads, with the Response
-- object as returned and its input items (GET /v1/responses/:id[/input_items]).
CREATE TABLE responses (
  tenant_id     TEXT NOT NULL,
  id            TEXT NOT NULL,
  thread_id     TEXT NOT NULL,
  checkpoint_id TEXT NOT NULL,
  body          TEXT NOT NULL,
  input         TEXT NOT NULL,
  created_at    INTEGER NOT NULL,
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX responses_by_thread ON responses (tenant_id, thread_id);

-- A conversation is a thread seen through the Conversations API; this holds its metadata.
CREATE TABLE conversations (
  tenant_id     TEXT NOT NULL,
  id            TEXT NOT NULL,
  metadata      TEXT NOT NULL,
  created_at    INTEGER NOT NULL,
  PRIMARY KEY (tenant_id, id)
);

-- Idempotency-Key: the first request claims the key (status NULL while it runs), then
-- stores its result; a replay within 24 h returns it. body_hash catches a reused key.
CREATE TABLE idempotency_keys (
  tenant_id     TEXT NOT NULL,
  key           TEXT NOT NULL,
  route         TEXT NOT NULL,
  body_hash     TEXT NOT NULL,
  status        INTEGER,
  headers       TEXT,
  response      TEXT,
  lease_until   INTEGER NOT NULL,
  expires_at    INTEGER NOT NULL,
  PRIMARY KEY (tenant_id, key)
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);
-- The tenant's expired records, removed when its kept results reach MAX_IDEMPOTENCY_BYTES_PER_TENANT (migration 0022).
CREATE INDEX idempotency_keys_tenant_expiry ON idempotency_keys (tenant_id, expires_at);

-- Threads of a tenant that hold LangGraph checkpoints (the checkpoints live in each thread's object).
CREATE TABLE langgraph_threads (
  tenant_id   TEXT NOT NULL,
  thread_id   TEXT NOT NULL,
  created_at  INTEGER NOT NULL,
  PRIMARY KEY (tenant_id, thread_id)
);

-- LangGraph store items: namespace labels joined by '.' (labels never contain '.'), JSON values.
CREATE TABLE store_items (
  tenant_id   TEXT NOT NULL,
  namespace   TEXT NOT NULL,
  key         TEXT NOT NULL,
  value       TEXT NOT NULL,
  created_at  INTEGER NOT NULL,
  updated_at  INTEGER NOT NULL,
  expires_at  INTEGER,                    -- ms; NULL: never (LangGraph's TTL)
  ttl_minutes REAL,                       -- what a refreshing read renews it by
  -- index_text, vec, vec_by (0032): the texts a search's `query` ranks by (JSON array; NULL: index false), their
  -- vectors (int8, one per text, concatenated) and the embedder that made them (NULL: embedded when read).
  index_text TEXT, vec BLOB, vec_by TEXT,
  PRIMARY KEY (tenant_id, namespace, key)
);
CREATE INDEX store_items_by_update ON store_items (tenant_id, updated_at);
CREATE INDEX store_items_expiring ON store_items (tenant_id, expires_at) WHERE expires_at IS NOT NULL;

-- Per-tenant counts for the quotas (src/quotas.ts), kept by triggers in the same transaction as
-- every write that changes them, so a quota check reads one row instead of counting.
CREATE TABLE tenant_counts (
  tenant_id   TEXT NOT NULL,
  kind        TEXT NOT NULL,              -- keys (live, not revoked) | webhooks | threads | facts
  n           INTEGER NOT NULL,
  PRIMARY KEY (tenant_id, kind)
);

CREATE TRIGGER tenant_counts_key_insert AFTER INSERT ON api_keys WHEN new.revoked_at IS NULL BEGIN INSERT OR IGNORE INTO tenant_counts (tenant_id, kind, n) VALUES (new.tenant_id, 'keys', 0); UPDATE tenant_counts SET n = n + 1 WHERE tenant_id = new.tenant_id AND kind = 'keys'; END;
CREATE TRIGGER tenant_counts_key_revoke AFTER UPDATE OF revoked_at ON api_keys WHEN old.revoked_at IS NULL AND new.revoked_at IS NOT NULL BEGIN UPDATE tenant_counts SET n = n - 1 WHERE tenant_id = old.tenant_id AND kind = 'keys'; END;
CREATE TRIGGER tenant_counts_key_delete AFTER DELETE ON api_keys WHEN old.revoked_at IS NULL BEGIN UPDATE tenant_counts SET n = n - 1 WHERE tenant_id = old.tenant_id AND kind = 'keys'; END;
CREATE TRIGGER tenant_counts_webhook_insert AFTER INSERT ON webhooks BEGIN INSERT OR IGNORE INTO tenant_counts (tenant_id, kind, n) VALUES (new.tenant_id, 'webhooks', 0); UPDATE tenant_counts SET n = n + 1 WHERE tenant_id = new.tenant_id AND kind = 'webhooks'; END;
CREATE TRIGGER tenant_counts_webhook_delete AFTER DELETE ON webhooks BEGIN UPDATE tenant_counts SET n = n - 1 WHERE tenant_id = old.tenant_id AND kind = 'webhooks'; END;
CREATE TRIGGER tenant_counts_thread_insert AFTER INSERT ON threads BEGIN INSERT OR IGNORE INTO tenant_counts (tenant_id, kind, n) VALUES (new.tenant_id, CASE new.kind WHEN 'response' THEN 'response_threads' ELSE 'threads' END, 0); UPDATE tenant_counts SET n = n + 1 WHERE tenant_id = new.tenant_id AND kind = CASE new.kind WHEN 'response' THEN 'response_threads' ELSE 'threads' END; END;
CREATE TRIGGER tenant_counts_thread_delete AFTER DELETE ON threads BEGIN UPDATE tenant_counts SET n = n - 1 WHERE tenant_id = old.tenant_id AND kind = CASE old.kind WHEN 'response' THEN 'response_threads' ELSE 'threads' END; END;
CREATE TRIGGER tenant_counts_fact_insert AFTER INSERT ON facts BEGIN INSERT OR IGNORE INTO tenant_counts (tenant_id, kind, n) VALUES (new.tenant_id, 'facts', 0); UPDATE tenant_counts SET n = n + 1 WHERE tenant_id = new.tenant_id AND kind = 'facts'; END;
CREATE TRIGGER tenant_counts_fact_delete AFTER DELETE ON facts BEGIN UPDATE tenant_counts SET n = n - 1 WHERE tenant_id = old.tenant_id AND kind = 'facts'; END;

-- 0011: LangGraph threads count against the thread quota too; store items have their own.
CREATE TRIGGER tenant_counts_lg_thread_insert AFTER INSERT ON langgraph_threads BEGIN INSERT OR IGNORE INTO tenant_counts (tenant_id, kind, n) VALUES (new.tenant_id, 'threads', 0); UPDATE tenant_counts SET n = n + 1 WHERE tenant_id = new.tenant_id AND kind = 'threads'; END;
CREATE TRIGGER tenant_counts_lg_thread_delete AFTER DELETE ON langgraph_threads BEGIN UPDATE tenant_counts SET n = n - 1 WHERE tenant_id = old.tenant_id AND kind = 'threads'; END;
CREATE TRIGGER tenant_counts_store_item_insert AFTER INSERT ON store_items BEGIN INSERT OR IGNORE INTO tenant_counts (tenant_id, kind, n) VALUES (new.tenant_id, 'store_items', 0); UPDATE tenant_counts SET n = n + 1 WHERE tenant_id = new.tenant_id AND kind = 'store_items'; END;
CREATE TRIGGER tenant_counts_store_item_delete AFTER DELETE ON store_items BEGIN UPDATE tenant_counts SET n = n - 1 WHERE tenant_id = old.tenant_id AND kind = 'store_items'; END;
-- The bytes of the store items (namespace, key, value and index), for MAX_STORE_BYTES_PER_TENANT (migrations 0019, 0032).
CREATE TRIGGER tenant_counts_store_bytes_insert AFTER INSERT ON store_items BEGIN INSERT OR IGNORE INTO tenant_counts (tenant_id, kind, n) VALUES (new.tenant_id, 'store_bytes', 0); UPDATE tenant_counts SET n = n + (length(CAST(new.namespace AS BLOB)) + length(CAST(new.key AS BLOB)) + length(CAST(new.value AS BLOB)) + COALESCE(length(CAST(new.index_text AS BLOB)), 0) + COALESCE(length(new.vec), 0)) WHERE tenant_id = new.tenant_id AND kind = 'store_bytes'; END;
CREATE TRIGGER tenant_counts_store_bytes_update AFTER UPDATE OF value, index_text, vec ON store_items BEGIN UPDATE tenant_counts SET n = n - (length(CAST(old.namespace AS BLOB)) + length(CAST(old.key AS BLOB)) + length(CAST(old.value AS BLOB)) + COALESCE(length(CAST(old.index_text AS BLOB)), 0) + COALESCE(length(old.vec), 0)) + (length(CAST(new.namespace AS BLOB)) + length(CAST(new.key AS BLOB)) + length(CAST(new.value AS BLOB)) + COALESCE(length(CAST(new.index_text AS BLOB)), 0) + COALESCE(length(new.vec), 0)) WHERE tenant_id = new.tenant_id AND kind = 'store_bytes'; END;
CREATE TRIGGER tenant_counts_store_bytes_delete AFTER DELETE ON store_items BEGIN UPDATE tenant_counts SET n = n - (length(CAST(old.namespace AS BLOB)) + length(CAST(old.key AS BLOB)) + length(CAST(old.value AS BLOB)) + COALESCE(length(CAST(old.index_text AS BLOB)), 0) + COALESCE(length(old.vec), 0)) WHERE tenant_id = old.tenant_id AND kind = 'store_bytes'; END;
-- Idempotency-Key results' bytes per tenant (migration 0021, MAX_IDEMPOTENCY_BYTES_PER_TENANT).
CREATE TRIGGER tenant_counts_idempotency_bytes_insert AFTER INSERT ON idempotency_keys BEGIN INSERT OR IGNORE INTO tenant_counts (tenant_id, kind, n) VALUES (new.tenant_id, 'idempotency_bytes', 0); UPDATE tenant_counts SET n = n + (ifnull(length(CAST(new.headers AS BLOB)), 0) + ifnull(length(CAST(new.response AS BLOB)), 0)) WHERE tenant_id = new.tenant_id AND kind = 'idempotency_bytes'; END;
CREATE TRIGGER tenant_counts_idempotency_bytes_update AFTER UPDATE OF headers, response ON idempotency_keys BEGIN UPDATE tenant_counts SET n = n - (ifnull(length(CAST(old.headers AS BLOB)), 0) + ifnull(length(CAST(old.response AS BLOB)), 0)) + (ifnull(length(CAST(new.headers AS BLOB)), 0) + ifnull(length(CAST(new.response AS BLOB)), 0)) WHERE tenant_id = new.tenant_id AND kind = 'idempotency_bytes'; END;
CREATE TRIGGER tenant_counts_idempotency_bytes_delete AFTER DELETE ON idempotency_keys BEGIN UPDATE tenant_counts SET n = n - (ifnull(length(CAST(old.headers AS BLOB)), 0) + ifnull(length(CAST(old.response AS BLOB)), 0)) WHERE tenant_id = old.tenant_id AND kind = 'idempotency_bytes'; END;
CREATE TRIGGER key_counts_idempotency_bytes_insert AFTER INSERT ON idempotency_keys WHEN instr(new.key, ' ') > 1 BEGIN INSERT OR IGNORE INTO tenant_counts (tenant_id, kind, n) VALUES (new.tenant_id, 'idempotency_bytes:' || substr(new.key, 1, instr(new.key, ' ') - 1), 0); UPDATE tenant_counts SET n = n + (ifnull(length(CAST(new.headers AS BLOB)), 0) + ifnull(length(CAST(new.response AS BLOB)), 0)) WHERE tenant_id = new.tenant_id AND kind = 'idempotency_bytes:' || substr(new.key, 1, instr(new.key, ' ') - 1); END;
CREATE TRIGGER key_counts_idempotency_bytes_update AFTER UPDATE OF headers, response ON idempotency_keys WHEN instr(new.key, ' ') > 1 BEGIN UPDATE tenant_counts SET n = n - (ifnull(length(CAST(old.headers AS BLOB)), 0) + ifnull(length(CAST(old.response AS BLOB)), 0)) + (ifnull(length(CAST(new.headers AS BLOB)), 0) + ifnull(length(CAST(new.response AS BLOB)), 0)) WHERE tenant_id = new.tenant_id AND kind = 'idempotency_bytes:' || substr(new.key, 1, instr(new.key, ' ') - 1); END;
CREATE TRIGGER key_counts_idempotency_bytes_delete AFTER DELETE ON idempotency_keys WHEN instr(old.key, ' ') > 1 BEGIN UPDATE tenant_counts SET n = n - (ifnull(length(CAST(old.headers AS BLOB)), 0) + ifnull(length(CAST(old.response AS BLOB)), 0)) WHERE tenant_id = old.tenant_id AND kind = 'idempotency_bytes:' || substr(old.key, 1, instr(old.key, ' ') - 1); END;
-- Spend budgets (src/budgets/): what each one caps. Its counter lives in its own Durable Object
-- (BudgetDO, named tenant/id); this table is the index a turn reads to know which objects to ask.
CREATE TABLE budgets (
  tenant_id    TEXT NOT NULL,
  id           TEXT NOT NULL,
  kind         TEXT NOT NULL CHECK (kind IN ('tenant', 'key', 'thread', 'user', 'metadata')),
  target       TEXT NOT NULL,             -- '' for a tenant budget; the key id, thread id, end user or key=value otherwise
  limit_micro  INTEGER NOT NULL,          -- micro-USD
  window       TEXT,                      -- day | week | month; NULL: never resets
  anchor_ms    INTEGER NOT NULL,
  time_zone    TEXT NOT NULL,
  name         TEXT,
  created_at   INTEGER NOT NULL,
  updated_at   INTEGER NOT NULL,
  thresholds   TEXT NOT NULL DEFAULT '[]', -- JSON array of fractions of the limit (soft thresholds)
  alert_url    TEXT,                      -- where threshold events go
  alert_secret TEXT,                      -- signs them (HMAC needs it in clear, as a hook's secret)
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX budgets_target ON budgets (tenant_id, kind, target);
