-- Spend budgets (src/budgets/): what each one caps. Its counter lives in its own Durable Object
-- (BudgetDO, named tenant/id); this table is the index a turn reads to know which objects to ask.
CREATE TABLE budgets (
  tenant_id   TEXT NOT NULL,
  id          TEXT NOT NULL,
  kind        TEXT NOT NULL CHECK (kind IN ('tenant', 'key', 'thread')),
  target      TEXT NOT NULL,              -- '' for a tenant budget; the key id or thread id otherwise
  limit_micro INTEGER NOT NULL,           -- micro-USD
  window      TEXT,                       -- day | week | month; NULL: never resets
  anchor_ms   INTEGER NOT NULL,
  time_zone   TEXT NOT NULL,
  name        TEXT,
  created_at  INTEGER NOT NULL,
  updated_at  INTEGER NOT NULL,
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX budgets_target ON budgets (tenant_id, kind, target);
