-- A budget on a metadata value a request sends (docs/operations/budgets.md): kind 'metadata', target 'key=value'.
-- SQLite cannot change a CHECK in place: the table is copied into one that allows it.
CREATE TABLE budgets_next (
  tenant_id    TEXT NOT NULL,
  id           TEXT NOT NULL,
  kind         TEXT NOT NULL CHECK (kind IN ('tenant', 'key', 'thread', 'user', 'metadata')),
  target       TEXT NOT NULL,             -- '' for a tenant budget; the key id, thread id, end user or key=value otherwise
  limit_micro  INTEGER NOT NULL,
  window       TEXT,
  anchor_ms    INTEGER NOT NULL,
  time_zone    TEXT NOT NULL,
  name         TEXT,
  created_at   INTEGER NOT NULL,
  updated_at   INTEGER NOT NULL,
  thresholds   TEXT NOT NULL DEFAULT '[]',
  alert_url    TEXT,
  alert_secret TEXT,
  PRIMARY KEY (tenant_id, id)
);
INSERT INTO budgets_next SELECT tenant_id, id, kind, target, limit_micro, window, anchor_ms, time_zone, name, created_at, updated_at, thresholds, alert_url, alert_secret FROM budgets;
DROP TABLE budgets;
ALTER TABLE budgets_next RENAME TO budgets;
CREATE INDEX budgets_target ON budgets (tenant_id, kind, target);
