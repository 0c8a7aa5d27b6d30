import { z } from "@hono/zod-openapi";
import type { Message } from "../core/message";

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

  /**
   * Blanks, in every stored response of the thread, the input and output items that carried `removed` (a deleted
   * conversation item): the records hold items, not message ids, so an item is matched by its text or its call id.
   */
  redact(removed: readonly Message[]): void {
    if (removed.length === 0) return;
    const texts = new Set(removed.map(textOf).filter((t) => t !== ""));
    const calls = new Set(removed.flatMap((m) => [...(m.tool_calls ?? []).map((c) => c.id), ...(m.tool_call_id ? [m.tool_call_id] : [])]));
    const blank = (item: unknown): unknown => {
      if (typeof item !== "object" || item === null) return item;
      const i = item as Record<string, unknown>;
      if (i.type === "message" && Array.isArray(i.content) && texts.has(partsText(i.content))) {
        return { ...i, content: i.content.map((p: unknown) => (typeof p === "object" && p !== null && "text" in p ? { ...p, text: "" } : p)) };
      }
      if (typeof i.call_id === "string" && calls.has(i.call_id)) {
        if (i.type === "function_call") return { ...i, arguments: "{}" };
        if (i.type === "function_call_output") return { ...i, output: "" };
      }
      return item;
    };
    for (const r of this.sql.exec<{ id: string; body: string; input: string }>(`SELECT id, body, input FROM responses`).toArray()) {
      const input = JSON.stringify((JSON.parse(r.input) as unknown[]).map(blank));
      const parsed = JSON.parse(r.body) as Record<string, unknown>;
      const body = JSON.stringify(Array.isArray(parsed.output) ? { ...parsed, output: parsed.output.map(blank) } : parsed);
      if (input !== r.input || body !== r.body) this.sql.exec(`UPDATE responses SET input = ?, body = ? WHERE id = ?`, input, body, r.id);
    }
  }

  delete(id: string): boolean {
    return this.sql.exec(`DELETE FROM responses WHERE id = ?`, id).rowsWritten > 0;
  }
}

/** A message's text as its Responses items carry it: the string, or its text parts joined. */
function textOf(m: Message): string {
  return typeof m.content === "string" ? m.content : partsText(m.content ?? []);
}

function partsText(parts: readonly unknown[]): string {
  return parts.map((p) => (typeof p === "object" && p !== null && "text" in p && typeof p.text === "string" ? p.text : "")).join("");
}
