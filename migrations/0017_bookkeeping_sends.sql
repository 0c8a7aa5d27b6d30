-- A thread object's newest send of its runs' bookkeeping (src/object/bookkeeping-flush.ts). A send's usage
-- adds in only if the send moved its sender's row forward in the same batch, so a send retried after it had
-- landed (its answer lost) adds nothing twice, and a stale try landing late adds nothing at all.
CREATE TABLE bookkeeping_sends (
  sender  TEXT PRIMARY KEY,   -- one incarnation of a thread object: a random id it keeps in its own storage
  seq     INTEGER NOT NULL,   -- its newest send that landed
  attempt TEXT NOT NULL,      -- the try of that send that wrote it
  sent_at INTEGER NOT NULL    -- unix ms; the hourly cron removes rows a day old
);
