-- Remembering the same text in the same scope again returns the fact already there (a rerun example stored
-- it twice, and it loaded twice). text_hash is the SHA-256 of the normalised text (src/memory/fact-text-hash.ts:
-- NFC, lower case, runs of white space as one space, trimmed), written with every fact; a keyed fact is
-- addressed by its key, so only facts without a key are unique by text. Rows written before this migration
-- have no hash: the hourly purge fills it in (and drops the later copy of a duplicate).
ALTER TABLE facts ADD COLUMN text_hash TEXT;
CREATE UNIQUE INDEX facts_by_text ON facts (tenant_id, scope, text_hash) WHERE key IS NULL;
CREATE INDEX facts_unhashed ON facts (tenant_id) WHERE text_hash IS NULL;
