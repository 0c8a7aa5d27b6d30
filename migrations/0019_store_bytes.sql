-- LangGraph store items are also capped in bytes per tenant (MAX_STORE_BYTES_PER_TENANT): their count alone
-- let one tenant hold 100,000 items of 1 MiB, 100 GB of the D1 database every tenant shares. The count
-- ('store_bytes': the bytes of the items' JSON values) is kept by triggers like the others, existing items first.
INSERT INTO tenant_counts (tenant_id, kind, n) SELECT tenant_id, 'store_bytes', SUM(length(CAST(value AS BLOB))) FROM store_items GROUP BY tenant_id;
CREATE TRIGGER tenant_counts_store_bytes_insert AFTER INSERT ON store_items BEGIN INSERT OR IGNORE INTO tenant_counts (tenant_id, kind, n) VALUES (new.tenant_id, 'store_bytes', 0); UPDATE tenant_counts SET n = n + length(CAST(new.value AS BLOB)) WHERE tenant_id = new.tenant_id AND kind = 'store_bytes'; END;
CREATE TRIGGER tenant_counts_store_bytes_update AFTER UPDATE OF value ON store_items BEGIN UPDATE tenant_counts SET n = n - length(CAST(old.value AS BLOB)) + length(CAST(new.value AS BLOB)) WHERE tenant_id = new.tenant_id AND kind = 'store_bytes'; END;
CREATE TRIGGER tenant_counts_store_bytes_delete AFTER DELETE ON store_items BEGIN UPDATE tenant_counts SET n = n - length(CAST(old.value AS BLOB)) WHERE tenant_id = old.tenant_id AND kind = 'store_bytes'; END;
