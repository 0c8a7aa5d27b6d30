-- Webhooks carry the grants given at registration (finding 3 of issue 11): a delivery
-- runs with exactly these, never more than the registering key had. Hooks registered
-- before this migration hold none, so they reach no thread until re-registered.
ALTER TABLE webhooks ADD COLUMN grants TEXT NOT NULL DEFAULT '[]';          -- JSON array of grant patterns
ALTER TABLE webhooks ADD COLUMN rewrite_history INTEGER NOT NULL DEFAULT 0; -- 1: may run agents that rewrite stored history
