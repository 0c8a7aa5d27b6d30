-- Each fact's vector for ranking by meaning (docs/recall.md): written with its text (a replacement through its key
-- writes a new one), int8, by the embedder named in vec_by; NULL for a fact remembered before this migration or
-- while the embedder was not ready, which the ranking embeds when it reads it. The row is the fact's: forgotten or
-- purged, its vector goes with it; expired, it is never read (every read keeps to live facts).
ALTER TABLE facts ADD COLUMN vec BLOB;
ALTER TABLE facts ADD COLUMN vec_by TEXT;
