-- Soft thresholds on a budget (docs/operations/budgets.md): fractions of its limit that each send a signed
-- event once per window to alert_url, signed with alert_secret (HMAC needs it in clear, as a hook's secret).
ALTER TABLE budgets ADD COLUMN thresholds TEXT NOT NULL DEFAULT '[]';
ALTER TABLE budgets ADD COLUMN alert_url TEXT;
ALTER TABLE budgets ADD COLUMN alert_secret TEXT;

-- A budget on the end user a request names (OpenAI's `user`, Anthropic's `metadata.user_id`): kind 'user'.
-- SQLite cannot change a CHECK in place: the table is copied into one that allows it.
CREATE TABLE budgets_next (
  tenant_id    TEXT NOT NULL,
  id           TEXT NOT NULL,
  kind         TEXT NOT NULL CHECK (kind IN ('tenant', 'key', 'thread', 'user')),
  target       TEXT NOT NULL,             -- '' for a tenant budget; the key id, thread id or end user otherwise
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
