import { z } from "@hono/zod-openapi";

/**
 * A thread's stored Responses (OpenAI Responses API), in the thread's own SQLite beside the
 * checkpoints they point at: continuing one (`previous_response_id`) reads it inside the
 * run, and deleting the thread deletes them. To this layer a record's body and input items
 * are opaque JSON text; `call_ids` are the function calls its output made, which a later
 * input's `function_call_output` items may answer.
 */
export const STORED_RESPONSES_DDL = `CREATE TABLE responses (
  id TEXT PRIMARY KEY,
  checkpoint_id TEXT NOT NULL,
  call_ids TEXT NOT NULL,
  body TEXT NOT NULL,
  input TEXT NOT NULL,
  created_at INTEGER NOT NULL
)`;

export const StoredResponse = z.object({
  id: z.string(),
  checkpoint_id: z.string(),
  call_ids: z.array(z.string()),
  body: z.string(),
  input: z.string(),
  created_at: z.number().int(),
});
export type StoredResponse = z.infer<typeof StoredResponse>;

/** A row as stored: call_ids as JSON text (written only by put). */
const Row = StoredResponse.extend({
  call_ids: z
    .string()
    .transform((s): unknown => JSON.parse(s))
    .pipe(z.array(z.string())),
});

/** The thread's stored Responses, one capability of its object (the table above is its own). */
export class StoredResponses {
  constructor(private readonly sql: SqlStorage) {}

  /** Stores the record; returns the texts it stored, which the thread counts as history (ThreadStore.chargeAlongside). */
  put(r: StoredResponse): string[] {
    const callIds = JSON.stringify(r.call_ids);
    this.sql.exec(
      `INSERT INTO responses (id, checkpoint_id, call_ids, body, input, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
      r.id,
      r.checkpoint_id,
      callIds,
      r.body,
      r.input,
      r.created_at,
    );
    return [r.body, r.input, callIds];
  }

  get(id: string): StoredResponse | null {
    const row = this.sql.exec(`SELECT id, checkpoint_id, call_ids, body, input, created_at FROM responses WHERE id = ?`, id).toArray()[0];
    return row === undefined ? null : Row.parse(row);
  }

  delete(id: string): boolean {
    return this.sql.exec(`DELETE FROM responses WHERE id = ?`, id).rowsWritten > 0;
  }
}
