-- facts_fts takes marks (Unicode category M) as word characters: unicode61 took only letters, digits and private
-- use, so a Devanagari or Tamil word (हिन्दी) was indexed as its consonants apart (ह / न / द) and never found.
-- A fact's fts_text was written split the same way (src/memory/tenant-words.ts, now keeping marks in a word): a
-- fact whose text is not all ASCII, the only ones that can hold a mark, loses it and is indexed again under its
-- marked words by the hourly purge (fact-backfill.ts markOlderFacts), by the dense channel meanwhile.
UPDATE facts SET fts_text = NULL WHERE fts_text IS NOT NULL AND length(CAST(text AS BLOB)) <> length(text);
DROP TABLE facts_fts;
CREATE VIRTUAL TABLE facts_fts USING fts5(text, tokenize = 'porter unicode61 remove_diacritics 2 categories ''L* N* Co M*''');
INSERT INTO facts_fts (rowid, text)
  SELECT s.span * 68719476736 + f.rowid, f.fts_text FROM facts f JOIN fact_scope_stats s ON s.tenant_id = f.tenant_id AND s.scope = f.scope ORDER BY 1;
