-- Per-tenant quotas (issue 11, finding 12): how many live keys, webhooks, threads and facts each
-- tenant holds. Triggers keep the counts in the same transaction as every write that changes them,
-- whichever code path writes, so a quota check reads one row instead of counting.
CREATE TABLE tenant_counts (
  tenant_id   TEXT NOT NULL,
  kind        TEXT NOT NULL,              -- keys (live, not revoked) | webhooks | threads | facts
  n           INTEGER NOT NULL,
  PRIMARY KEY (tenant_id, kind)
);

INSERT INTO tenant_counts (tenant_id, kind, n) SELECT tenant_id, 'keys', COUNT(*) FROM api_keys WHERE revoked_at IS NULL GROUP BY tenant_id;
INSERT INTO tenant_counts (tenant_id, kind, n) SELECT tenant_id, 'webhooks', COUNT(*) FROM webhooks GROUP BY tenant_id;
INSERT INTO tenant_counts (tenant_id, kind, n) SELECT tenant_id, 'threads', COUNT(*) FROM threads GROUP BY tenant_id;
INSERT INTO tenant_counts (tenant_id, kind, n) SELECT tenant_id, 'facts', COUNT(*) FROM facts GROUP BY tenant_id;

CREATE TRIGGER tenant_counts_key_insert AFTER INSERT ON api_keys WHEN new.revoked_at IS NULL BEGIN INSERT OR IGNORE INTO tenant_counts (tenant_id, kind, n) VALUES (new.tenant_id, 'keys', 0); UPDATE tenant_counts SET n = n + 1 WHERE tenant_id = new.tenant_id AND kind = 'keys'; END;
CREATE TRIGGER tenant_counts_key_revoke AFTER UPDATE OF revoked_at ON api_keys WHEN old.revoked_at IS NULL AND new.revoked_at IS NOT NULL BEGIN UPDATE tenant_counts SET n = n - 1 WHERE tenant_id = old.tenant_id AND kind = 'keys'; END;
CREATE TRIGGER tenant_counts_key_delete AFTER DELETE ON api_keys WHEN old.revoked_at IS NULL BEGIN UPDATE tenant_counts SET n = n - 1 WHERE tenant_id = old.tenant_id AND kind = 'keys'; END;
CREATE TRIGGER tenant_counts_webhook_insert AFTER INSERT ON webhooks BEGIN INSERT OR IGNORE INTO tenant_counts (tenant_id, kind, n) VALUES (new.tenant_id, 'webhooks', 0); UPDATE tenant_counts SET n = n + 1 WHERE tenant_id = new.tenant_id AND kind = 'webhooks'; END;
CREATE TRIGGER tenant_counts_webhook_delete AFTER DELETE ON webhooks BEGIN UPDATE tenant_counts SET n = n - 1 WHERE tenant_id = old.tenant_id AND kind = 'webhooks'; END;
CREATE TRIGGER tenant_counts_thread_insert AFTER INSERT ON threads BEGIN INSERT OR IGNORE INTO tenant_counts (tenant_id, kind, n) VALUES (new.tenant_id, 'threads', 0); UPDATE tenant_counts SET n = n + 1 WHERE tenant_id = new.tenant_id AND kind = 'threads'; END;
CREATE TRIGGER tenant_counts_thread_delete AFTER DELETE ON threads BEGIN UPDATE tenant_counts SET n = n - 1 WHERE tenant_id = old.tenant_id AND kind = 'threads'; END;
CREATE TRIGGER tenant_counts_fact_insert AFTER INSERT ON facts BEGIN INSERT OR IGNORE INTO tenant_counts (tenant_id, kind, n) VALUES (new.tenant_id, 'facts', 0); UPDATE tenant_counts SET n = n + 1 WHERE tenant_id = new.tenant_id AND kind = 'facts'; END;
CREATE TRIGGER tenant_counts_fact_delete AFTER DELETE ON facts BEGIN UPDATE tenant_counts SET n = n - 1 WHERE tenant_id = old.tenant_id AND kind = 'facts'; END;
