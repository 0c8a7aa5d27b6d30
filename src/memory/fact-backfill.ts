import { markedText, tenantMark } from "./tenant-words";
import { factTextHash } from "./fact-text-hash";

type Unhashed = { r: number; tenant_id: string; scope: string; text: string };

/**
 * Facts written before migration 0028 have no text_hash, so remembering their text again would store it
 * again. The hourly purge hashes them in bounded batches, oldest first; a fact without a key whose text
 * its scope already holds hashed is a duplicate, and goes (with its history and index rows, by trigger).
 */
export async function hashOlderFacts(db: D1Database, batch = 200, maxBatches = 25): Promise<{ hashed: number; duplicates: number }> {
  let hashed = 0;
  let duplicates = 0;
  for (let i = 0; i < maxBatches; i++) {
    const { results } = await db
      .prepare("SELECT rowid AS r, tenant_id, scope, text FROM facts WHERE text_hash IS NULL ORDER BY rowid LIMIT ?")
      .bind(batch)
      .all<Unhashed>();
    if (results.length === 0) break;
    const statements: D1PreparedStatement[] = [];
    for (const row of results) {
      const hash = await factTextHash(row.text);
      statements.push(
        db
          .prepare(
            "DELETE FROM facts WHERE rowid = ? AND key IS NULL AND EXISTS (SELECT 1 FROM facts f WHERE f.tenant_id = ? AND f.scope = ? AND f.key IS NULL AND f.text_hash = ?)",
          )
          .bind(row.r, row.tenant_id, row.scope, hash),
        db.prepare("UPDATE facts SET text_hash = ? WHERE rowid = ?").bind(hash, row.r),
      );
    }
    // In order, in one transaction: a row hashed here is seen by the duplicate check of the rows after it.
    const done = await db.batch(statements);
    for (let j = 0; j < done.length; j += 2) {
      duplicates += done[j]!.meta.changes;
      hashed += done[j + 1]!.meta.changes;
    }
    if (results.length < batch) break;
  }
  return { hashed, duplicates };
}

/**
 * Facts written before migration 0031 are indexed under their plain words, which no search names any more.
 * The hourly purge writes their fts_text (the update trigger re-indexes them under their tenant's mark), in
 * bounded batches, oldest first.
 */
export async function markOlderFacts(db: D1Database, batch = 500, maxBatches = 20): Promise<number> {
  let marked = 0;
  for (let i = 0; i < maxBatches; i++) {
    const { results } = await db
      .prepare("SELECT rowid AS r, tenant_id, text FROM facts WHERE fts_text IS NULL ORDER BY rowid LIMIT ?")
      .bind(batch)
      .all<{ r: number; tenant_id: string; text: string }>();
    if (results.length === 0) break;
    const statements: D1PreparedStatement[] = [];
    for (const row of results) {
      statements.push(db.prepare("UPDATE facts SET fts_text = ? WHERE rowid = ?").bind(markedText(await tenantMark(row.tenant_id), row.text), row.r));
    }
    for (const done of await db.batch(statements)) marked += done.meta.changes;
    if (results.length < batch) break;
  }
  return marked;
}
