-- A hook may be registered to write facts (remember / forget tools, extraction after its turns)
-- within its grants. Off by default: a delivery's text comes from outside the tenant, so writing
-- long-term memory from it is something the registering admin opts into.
ALTER TABLE webhooks ADD COLUMN write_facts INTEGER NOT NULL DEFAULT 0; -- 1: deliveries may write facts within the hook's grants
