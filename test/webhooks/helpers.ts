import { env, exports } from "cloudflare:workers";
import { sign } from "../../src/webhooks/signature";
import { api, type TestTenant } from "../support/tenants";

export type Hook = { id: string; secret: string; callback_url: string | null };

export async function registerHook(t: TestTenant, over: Record<string, unknown> = {}): Promise<Hook> {
  const res = await api("/v1/webhooks", {
    key: t.adminKey,
    // Grants for any thread and the assistant agent's layers (which trim the stored history).
    body: {
      name: "helpdesk",
      agent_name: "assistant",
      thread_from: "/ticket/id",
      text_from: "/ticket/body",
      scopes: ["session:*", "organization:acme"],
      rewrite_history: true,
      ...over,
    },
  });
  if (res.status !== 201) throw new Error(`register failed: ${res.status} ${await res.text()}`);
  return (await res.json()) as Hook;
}

export const nowSeconds = () => Math.floor(Date.now() / 1000);

export type DeliverOptions = {
  timestamp?: number | string;
  /** Replaces the computed signature header (or removes it with null). */
  signature?: string | null;
  deliveryId?: string;
  /** Signs with this secret instead of the hook's. */
  secret?: string;
  headers?: Record<string, string>;
};

/** POSTs `body` (a string is sent as is) to the hook, signed like a real sender would. */
export async function deliver(hook: Pick<Hook, "id" | "secret">, body: unknown, o: DeliverOptions = {}): Promise<Response> {
  const raw = typeof body === "string" ? body : JSON.stringify(body);
  const ts = String(o.timestamp ?? nowSeconds());
  const headers: Record<string, string> = { "content-type": "application/json", "x-edgeweave-timestamp": ts, ...(o.headers ?? {}) };
  const signature = o.signature === undefined ? await sign(o.secret ?? hook.secret, ts, raw) : o.signature;
  if (signature !== null) headers["x-edgeweave-signature"] = signature;
  if (o.deliveryId !== undefined) headers["x-edgeweave-delivery"] = o.deliveryId;
  return exports.default.fetch(`http://x/v1/webhooks/${hook.id}`, { method: "POST", headers, body: raw });
}

/** Polls until `check` returns a value (not undefined), or fails after `ms`. */
export async function waitFor<T>(what: string, check: () => Promise<T | undefined>, ms = 15_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export type DeliveryRow = { status: string; result: string | null; thread_id: string; input: string };

export const deliveryRow = (hookId: string, deliveryId: string) =>
  env.DB.prepare("SELECT status, result, thread_id, input FROM webhook_deliveries WHERE webhook_id = ? AND delivery_id = ?")
    .bind(hookId, deliveryId)
    .first<DeliveryRow>();

export const deliveryCount = async (hookId: string) =>
  (await env.DB.prepare("SELECT COUNT(*) AS n FROM webhook_deliveries WHERE webhook_id = ?").bind(hookId).first<{ n: number }>())?.n ?? 0;

/** The thread's stored messages (role + content) through the public state route. */
export async function threadMessages(t: TestTenant, threadId: string): Promise<{ role: string; content: unknown }[]> {
  const res = await api(`/v1/threads/${threadId}/state`, { key: t.adminKey });
  if (res.status === 404) return [];
  if (res.status !== 200) throw new Error(`state failed: ${res.status} ${await res.text()}`);
  const s = (await res.json()) as { channels: { messages: { role: string; content: unknown }[] } };
  return s.channels.messages;
}
