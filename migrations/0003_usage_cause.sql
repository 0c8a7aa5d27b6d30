-- Usage by cause: every provider call is recorded with what made it (issue 11, finding 10).
-- SQLite cannot change a primary key in place: rename, recreate, copy (old rows were all turns), drop.
ALTER TABLE usage RENAME TO usage_before_cause;

CREATE TABLE usage (
  tenant_id         TEXT NOT NULL,
  day               TEXT NOT NULL,        -- YYYY-MM-DD (UTC)
  model             TEXT NOT NULL,
  cause             TEXT NOT NULL DEFAULT 'turn', -- turn | webhook | summarization | summarize_task | extraction
  requests          INTEGER NOT NULL DEFAULT 0,
  prompt_tokens     INTEGER NOT NULL DEFAULT 0,
  completion_tokens INTEGER NOT NULL DEFAULT 0,
  cost              REAL NOT NULL DEFAULT 0,
  PRIMARY KEY (tenant_id, day, model, cause)
);

INSERT INTO usage (tenant_id, day, model, cause, requests, prompt_tokens, completion_tokens, cost)
  SELECT tenant_id, day, model, 'turn', requests, prompt_tokens, completion_tokens, cost FROM usage_before_cause;

DROP TABLE usage_before_cause;
