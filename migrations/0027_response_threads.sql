-- One-off Responses calls (no conversation, previous_response_id or X-Thread-Id) start a thread of
-- kind 'response': kept 30 days after its last write as OpenAI keeps stored responses (the hourly
-- cron deletes it), listed apart from conversations, and counted against its own quota
-- (MAX_RESPONSE_THREADS_PER_TENANT), not MAX_THREADS_PER_TENANT. Rebuilt (not ALTERed) so the
-- table reads as schema.sql writes it; the copy keeps every row a conversation, so counts are unchanged.
CREATE TABLE threads_v2 (
  tenant_id   TEXT NOT NULL,
  thread_id   TEXT NOT NULL,
  created_at  INTEGER NOT NULL,
  updated_at  INTEGER NOT NULL,
  kind        TEXT NOT NULL DEFAULT 'conversation',
  expires_at  INTEGER,
  PRIMARY KEY (tenant_id, thread_id)
);
INSERT INTO threads_v2 (tenant_id, thread_id, created_at, updated_at) SELECT tenant_id, thread_id, created_at, updated_at FROM threads;
DROP TABLE threads;
ALTER TABLE threads_v2 RENAME TO threads;
CREATE INDEX threads_by_update ON threads (tenant_id, updated_at, thread_id);
CREATE INDEX threads_expiring ON threads (expires_at) WHERE expires_at IS NOT NULL;
CREATE TRIGGER tenant_counts_thread_insert AFTER INSERT ON threads BEGIN INSERT OR IGNORE INTO tenant_counts (tenant_id, kind, n) VALUES (new.tenant_id, CASE new.kind WHEN 'response' THEN 'response_threads' ELSE 'threads' END, 0); UPDATE tenant_counts SET n = n + 1 WHERE tenant_id = new.tenant_id AND kind = CASE new.kind WHEN 'response' THEN 'response_threads' ELSE 'threads' END; END;
CREATE TRIGGER tenant_counts_thread_delete AFTER DELETE ON threads BEGIN UPDATE tenant_counts SET n = n - 1 WHERE tenant_id = old.tenant_id AND kind = CASE old.kind WHEN 'response' THEN 'response_threads' ELSE 'threads' END; END;
