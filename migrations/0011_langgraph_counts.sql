-- LangGraph threads count against the tenant's thread quota (MAX_THREADS_PER_TENANT) like chat threads:
-- each holds checkpoints in its own thread object. Existing ones are added to the counts first.
UPDATE tenant_counts SET n = n + (SELECT COUNT(*) FROM langgraph_threads l WHERE l.tenant_id = tenant_counts.tenant_id) WHERE kind = 'threads';
INSERT OR IGNORE INTO tenant_counts (tenant_id, kind, n) SELECT tenant_id, 'threads', COUNT(*) FROM langgraph_threads GROUP BY tenant_id;

CREATE TRIGGER tenant_counts_lg_thread_insert AFTER INSERT ON langgraph_threads BEGIN INSERT OR IGNORE INTO tenant_counts (tenant_id, kind, n) VALUES (new.tenant_id, 'threads', 0); UPDATE tenant_counts SET n = n + 1 WHERE tenant_id = new.tenant_id AND kind = 'threads'; END;
CREATE TRIGGER tenant_counts_lg_thread_delete AFTER DELETE ON langgraph_threads BEGIN UPDATE tenant_counts SET n = n - 1 WHERE tenant_id = old.tenant_id AND kind = 'threads'; END;

-- LangGraph store items have their own quota (MAX_STORE_ITEMS_PER_TENANT), kept the same way.
INSERT INTO tenant_counts (tenant_id, kind, n) SELECT tenant_id, 'store_items', COUNT(*) FROM store_items GROUP BY tenant_id;
CREATE TRIGGER tenant_counts_store_item_insert AFTER INSERT ON store_items BEGIN INSERT OR IGNORE INTO tenant_counts (tenant_id, kind, n) VALUES (new.tenant_id, 'store_items', 0); UPDATE tenant_counts SET n = n + 1 WHERE tenant_id = new.tenant_id AND kind = 'store_items'; END;
CREATE TRIGGER tenant_counts_store_item_delete AFTER DELETE ON store_items BEGIN UPDATE tenant_counts SET n = n - 1 WHERE tenant_id = old.tenant_id AND kind = 'store_items'; END;
