-- OpenAI Responses + Conversations over threads, and Idempotency-Key records (issue 14).

-- A stored response: a checkpoint of one of the tenant's threads, with the Response
-- object as returned and its input items (GET /v1/responses/:id[/input_items]).
CREATE TABLE responses (
  tenant_id     TEXT NOT NULL,
  id            TEXT NOT NULL,
  thread_id     TEXT NOT NULL,
  checkpoint_id TEXT NOT NULL,
  body          TEXT NOT NULL,
  input         TEXT NOT NULL,
  created_at    INTEGER NOT NULL,
  PRIMARY KEY (tenant_id, id)
);

-- A conversation is a thread seen through the Conversations API; this holds its metadata.
CREATE TABLE conversations (
  tenant_id     TEXT NOT NULL,
  id            TEXT NOT NULL,
  metadata      TEXT NOT NULL,
  created_at    INTEGER NOT NULL,
  PRIMARY KEY (tenant_id, id)
);

-- Idempotency-Key: the first request claims the key (status NULL while it runs), then
-- stores its result; a replay within 24 h returns it. body_hash catches a reused key.
CREATE TABLE idempotency_keys (
  tenant_id     TEXT NOT NULL,
  key           TEXT NOT NULL,
  route         TEXT NOT NULL,
  body_hash     TEXT NOT NULL,
  status        INTEGER,
  headers       TEXT,
  response      TEXT,
  lease_until   INTEGER NOT NULL,
  expires_at    INTEGER NOT NULL,
  PRIMARY KEY (tenant_id, key)
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);
