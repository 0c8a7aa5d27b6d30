import { z } from "@hono/zod-openapi";
import { REPLAY_RECORD_MS } from "./signature";
import { randomHex } from "../core/encoding";

/** A registered hook as the tenant sees it (the secret is shown once, at creation). */
export const Webhook = z
  .object({
    id: z.string(),
    name: z.string(),
    agent_name: z.string(),
    thread_from: z.string(),
    text_from: z.string(),
    callback_url: z.string().nullable(),
    scopes: z.array(z.string()).openapi({ description: "The grants deliveries run with (given at registration, within the registering key's)" }),
    rewrite_history: z.boolean().openapi({ description: "Whether deliveries may run agents that rewrite stored history (trim, delete_old, summarization)" }),
    write_facts: z.boolean().openapi({ description: "Whether deliveries may write facts within the hook's grants (remember / forget tools, extraction)" }),
    created_at: z.number().int(),
  })
  .openapi("Webhook");
export type Webhook = z.infer<typeof Webhook>;

/** The stored row: the secret is kept in clear because verifying an HMAC needs it. */
export type WebhookRecord = Webhook & { tenant_id: string; secret: string };

type Row = Omit<WebhookRecord, "scopes" | "rewrite_history" | "write_facts"> & { grants: string; rewrite_history: number; write_facts: number };

const Grants = z.array(z.string());
/** A malformed stored value grants nothing rather than failing the delivery. */
function grantsOf(json: string): string[] {
  try {
    const parsed = Grants.safeParse(JSON.parse(json));
    return parsed.success ? parsed.data : [];
  } catch {
    return [];
  }
}

function fromRow<T extends Partial<Row>>(
  r: T & Pick<Row, "grants" | "rewrite_history" | "write_facts">,
): Omit<T, "grants" | "rewrite_history" | "write_facts"> & Pick<Webhook, "scopes" | "rewrite_history" | "write_facts"> {
  const { grants, rewrite_history, write_facts, ...rest } = r;
  return { ...rest, scopes: grantsOf(grants), rewrite_history: rewrite_history === 1, write_facts: write_facts === 1 };
}

export type NewWebhook = Omit<Webhook, "id" | "created_at"> & { secret: string };

export const newWebhookId = (): string => `wh_${randomHex()}`;

const PUBLIC_COLUMNS = "id, name, agent_name, thread_from, text_from, callback_url, grants, rewrite_history, write_facts, created_at";

export async function insertWebhook(db: D1Database, tenant: string, w: NewWebhook, now = Date.now()): Promise<Webhook> {
  const id = newWebhookId();
  await db
    .prepare(
      "INSERT INTO webhooks (id, tenant_id, name, agent_name, thread_from, text_from, callback_url, secret, grants, rewrite_history, write_facts, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(
      id,
      tenant,
      w.name,
      w.agent_name,
      w.thread_from,
      w.text_from,
      w.callback_url,
      w.secret,
      JSON.stringify(w.scopes),
      w.rewrite_history ? 1 : 0,
      w.write_facts ? 1 : 0,
      now,
    )
    .run();
  return {
    id,
    name: w.name,
    agent_name: w.agent_name,
    thread_from: w.thread_from,
    text_from: w.text_from,
    callback_url: w.callback_url,
    scopes: w.scopes,
    rewrite_history: w.rewrite_history,
    write_facts: w.write_facts,
    created_at: now,
  };
}

/** A page of the tenant's hooks in creation order, starting after `after` (the cursor of the last hook seen). */
export async function listWebhooks(db: D1Database, tenant: string, limit: number, after?: { created_at: number; id: string }): Promise<Webhook[]> {
  const stmt = after
    ? db
        .prepare(
          `SELECT ${PUBLIC_COLUMNS} FROM webhooks WHERE tenant_id = ? AND (created_at > ? OR (created_at = ? AND id > ?)) ORDER BY created_at, id LIMIT ?`,
        )
        .bind(tenant, after.created_at, after.created_at, after.id, limit)
    : db.prepare(`SELECT ${PUBLIC_COLUMNS} FROM webhooks WHERE tenant_id = ? ORDER BY created_at, id LIMIT ?`).bind(tenant, limit);
  return (await stmt.all<Omit<Row, "tenant_id" | "secret">>()).results.map(fromRow);
}

/** Deletes the hook and its delivery records; false when the tenant has no such hook. */
export async function deleteWebhook(db: D1Database, tenant: string, id: string): Promise<boolean> {
  const [deleted] = await db.batch([
    db.prepare("DELETE FROM webhooks WHERE tenant_id = ? AND id = ?").bind(tenant, id),
    db.prepare("DELETE FROM webhook_deliveries WHERE tenant_id = ? AND webhook_id = ?").bind(tenant, id),
  ]);
  return (deleted?.meta.changes ?? 0) > 0;
}

/** Looks a hook up by id alone: the delivery route learns the tenant from the hook. */
export async function findWebhook(db: D1Database, id: string): Promise<WebhookRecord | null> {
  const row = await db.prepare(`SELECT ${PUBLIC_COLUMNS}, tenant_id, secret FROM webhooks WHERE id = ?`).bind(id).first<Row>();
  return row ? fromRow(row) : null;
}

/** A hook of this tenant by id, without its secret: what a task acting for the hook needs to know now. */
export async function getWebhook(db: D1Database, tenant: string, id: string): Promise<(Webhook & { tenant_id: string }) | null> {
  const row = await db
    .prepare(`SELECT ${PUBLIC_COLUMNS}, tenant_id FROM webhooks WHERE tenant_id = ? AND id = ?`)
    .bind(tenant, id)
    .first<Omit<Row, "secret">>();
  return row ? fromRow(row) : null;
}

export const DeliveryStatus = z.enum(["accepted", "replied", "done", "failed"]);
export type DeliveryStatus = z.infer<typeof DeliveryStatus>;

export type DeliveryRecord = {
  webhook_id: string;
  delivery_id: string;
  tenant_id: string;
  thread_id: string;
  input: string;
  status: DeliveryStatus;
  result: string | null;
  created_at: number;
  updated_at: number;
};

/**
 * Records a delivery unless it was already seen. True only for the first caller:
 * the primary key plus ON CONFLICT DO NOTHING makes concurrent repeats lose cleanly.
 */
export async function claimDelivery(
  db: D1Database,
  d: { webhookId: string; deliveryId: string; tenant: string; threadId: string; input: string },
  now = Date.now(),
): Promise<boolean> {
  const r = await db
    .prepare(
      "INSERT INTO webhook_deliveries (webhook_id, delivery_id, tenant_id, thread_id, input, status, result, created_at, updated_at) " +
        "VALUES (?, ?, ?, ?, ?, 'accepted', NULL, ?, ?) ON CONFLICT (webhook_id, delivery_id) DO NOTHING",
    )
    .bind(d.webhookId, d.deliveryId, d.tenant, d.threadId, d.input, now, now)
    .run();
  return r.meta.changes === 1;
}

/**
 * Claims a signed request (its signature covers timestamp and body). The same
 * signature seen again is a replay: the answer names the delivery it first made,
 * so a captured request resent under a new delivery id runs nothing twice.
 */
export async function claimSignature(
  db: D1Database,
  webhookId: string,
  signature: string,
  deliveryId: string,
  now = Date.now(),
): Promise<{ first: boolean; deliveryId: string }> {
  const [, inserted] = await db.batch([
    // Only records whose request is refused by its timestamp anyway: older than REPLAY_RECORD_MS.
    db.prepare("DELETE FROM webhook_signatures WHERE webhook_id = ? AND created_at < ?").bind(webhookId, now - REPLAY_RECORD_MS),
    db
      .prepare(
        "INSERT INTO webhook_signatures (webhook_id, signature, delivery_id, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (webhook_id, signature) DO NOTHING",
      )
      .bind(webhookId, signature, deliveryId, now),
  ]);
  if (inserted!.meta.changes === 1) return { first: true, deliveryId };
  const row = await db
    .prepare("SELECT delivery_id FROM webhook_signatures WHERE webhook_id = ? AND signature = ?")
    .bind(webhookId, signature)
    .first<{ delivery_id: string }>();
  return { first: false, deliveryId: row?.delivery_id ?? deliveryId };
}

export async function releaseSignature(db: D1Database, webhookId: string, signature: string): Promise<void> {
  await db.prepare("DELETE FROM webhook_signatures WHERE webhook_id = ? AND signature = ?").bind(webhookId, signature).run();
}

/** Undoes a claim whose task could not be enqueued, so the sender's retry is not swallowed. */
export async function releaseDelivery(db: D1Database, tenant: string, webhookId: string, deliveryId: string): Promise<void> {
  await db
    .prepare("DELETE FROM webhook_deliveries WHERE tenant_id = ? AND webhook_id = ? AND delivery_id = ? AND status = 'accepted'")
    .bind(tenant, webhookId, deliveryId)
    .run();
}

/** How long a delivery's record is kept after its last change: a month past any sender's retries (and a task queue's). */
export const DELIVERY_RECORD_MS = 30 * 86_400_000;

/**
 * The hourly cron: removes delivery records untouched for DELIVERY_RECORD_MS, so the table holds a month of
 * deliveries rather than every one ever made; a delivery id repeated after that runs as a new delivery.
 */
export async function purgeDeliveries(db: D1Database, now = Date.now()): Promise<void> {
  await db
    .prepare("DELETE FROM webhook_deliveries WHERE updated_at < ?")
    .bind(now - DELIVERY_RECORD_MS)
    .run();
}

export async function getDelivery(db: D1Database, tenant: string, webhookId: string, deliveryId: string): Promise<DeliveryRecord | null> {
  return db
    .prepare("SELECT * FROM webhook_deliveries WHERE tenant_id = ? AND webhook_id = ? AND delivery_id = ?")
    .bind(tenant, webhookId, deliveryId)
    .first<DeliveryRecord>();
}

/**
 * Settles a delivery. Past 'accepted' its turn has run (or never will), and the thread holds the
 * text, so the row's copy of it is cleared: a row is kept for good (a repeat stays a duplicate),
 * and up to 256 KiB of payload text in each would grow D1 with every delivery.
 */
export async function setDeliveryStatus(
  db: D1Database,
  tenant: string,
  webhookId: string,
  deliveryId: string,
  status: DeliveryStatus,
  result: unknown,
  now = Date.now(),
): Promise<void> {
  await db
    .prepare(
      "UPDATE webhook_deliveries SET status = ?1, result = ?2, updated_at = ?3, input = CASE WHEN ?1 = 'accepted' THEN input ELSE '' END " +
        "WHERE tenant_id = ?4 AND webhook_id = ?5 AND delivery_id = ?6",
    )
    .bind(status, JSON.stringify(result), now, tenant, webhookId, deliveryId)
    .run();
}
