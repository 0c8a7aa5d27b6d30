-- The LangGraph store's search by `query` (docs/guides/langgraph.md, docs/recall.md): each item's indexed texts
-- (a JSON array, the fields its `index` names, LangGraph's ["$"] by default; NULL when `index: false`), read by
-- full-text ranking, and their vectors (int8, one per text, concatenated) by the embedder named in vec_by (NULL
-- while it was not ready: a search embeds the texts when it reads them). They are the item's own columns: an
-- item deleted or expired takes them with it, and every read of them is bound to the tenant like the row.
ALTER TABLE store_items ADD COLUMN index_text TEXT;
ALTER TABLE store_items ADD COLUMN vec BLOB;
ALTER TABLE store_items ADD COLUMN vec_by TEXT;
-- They count against MAX_STORE_BYTES_PER_TENANT with the namespace, key and value (existing items have none yet).
DROP TRIGGER tenant_counts_store_bytes_insert;
DROP TRIGGER tenant_counts_store_bytes_update;
DROP TRIGGER tenant_counts_store_bytes_delete;
CREATE TRIGGER tenant_counts_store_bytes_insert AFTER INSERT ON store_items BEGIN INSERT OR IGNORE INTO tenant_counts (tenant_id, kind, n) VALUES (new.tenant_id, 'store_bytes', 0); UPDATE tenant_counts SET n = n + (length(CAST(new.namespace AS BLOB)) + length(CAST(new.key AS BLOB)) + length(CAST(new.value AS BLOB)) + COALESCE(length(CAST(new.index_text AS BLOB)), 0) + COALESCE(length(new.vec), 0)) WHERE tenant_id = new.tenant_id AND kind = 'store_bytes'; END;
CREATE TRIGGER tenant_counts_store_bytes_update AFTER UPDATE OF value, index_text, vec ON store_items BEGIN UPDATE tenant_counts SET n = n - (length(CAST(old.namespace AS BLOB)) + length(CAST(old.key AS BLOB)) + length(CAST(old.value AS BLOB)) + COALESCE(length(CAST(old.index_text AS BLOB)), 0) + COALESCE(length(old.vec), 0)) + (length(CAST(new.namespace AS BLOB)) + length(CAST(new.key AS BLOB)) + length(CAST(new.value AS BLOB)) + COALESCE(length(CAST(new.index_text AS BLOB)), 0) + COALESCE(length(new.vec), 0)) WHERE tenant_id = new.tenant_id AND kind = 'store_bytes'; END;
CREATE TRIGGER tenant_counts_store_bytes_delete AFTER DELETE ON store_items BEGIN UPDATE tenant_counts SET n = n - (length(CAST(old.namespace AS BLOB)) + length(CAST(old.key AS BLOB)) + length(CAST(old.value AS BLOB)) + COALESCE(length(CAST(old.index_text AS BLOB)), 0) + COALESCE(length(old.vec), 0)) WHERE tenant_id = old.tenant_id AND kind = 'store_bytes'; END;
