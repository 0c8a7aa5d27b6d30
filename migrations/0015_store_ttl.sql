-- LangGraph store TTL (issue 24 item 9): an item put with `ttl` (minutes) expires that long after
-- its put, or after the last read that refreshed it; expired items are never returned. The table is
-- rebuilt (ADD COLUMN would put the columns after the primary key, which schema.sql cannot say);
-- its count triggers go with the old table and are made again, and the copy fires none.
CREATE TABLE store_items_v2 (
  tenant_id   TEXT NOT NULL,
  namespace   TEXT NOT NULL,
  key         TEXT NOT NULL,
  value       TEXT NOT NULL,
  created_at  INTEGER NOT NULL,
  updated_at  INTEGER NOT NULL,
  expires_at  INTEGER,
  ttl_minutes REAL,
  PRIMARY KEY (tenant_id, namespace, key)
);
INSERT INTO store_items_v2 (tenant_id, namespace, key, value, created_at, updated_at)
  SELECT tenant_id, namespace, key, value, created_at, updated_at FROM store_items;
DROP TABLE store_items;
ALTER TABLE store_items_v2 RENAME TO store_items;
CREATE INDEX store_items_by_update ON store_items (tenant_id, updated_at);
CREATE INDEX store_items_expiring ON store_items (tenant_id, expires_at) WHERE expires_at IS NOT NULL;
CREATE TRIGGER tenant_counts_store_item_insert AFTER INSERT ON store_items BEGIN INSERT OR IGNORE INTO tenant_counts (tenant_id, kind, n) VALUES (new.tenant_id, 'store_items', 0); UPDATE tenant_counts SET n = n + 1 WHERE tenant_id = new.tenant_id AND kind = 'store_items'; END;
CREATE TRIGGER tenant_counts_store_item_delete AFTER DELETE ON store_items BEGIN UPDATE tenant_counts SET n = n - 1 WHERE tenant_id = old.tenant_id AND kind = 'store_items'; END;
