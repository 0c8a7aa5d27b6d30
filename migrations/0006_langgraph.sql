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
  PRIMARY KEY (tenant_id, namespace, key)
);
CREATE INDEX store_items_by_update ON store_items (tenant_id, updated_at);
