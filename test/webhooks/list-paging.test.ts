import { describe, expect, it } from "vitest";
import { api, createTenant } from "../support/tenants";
import { registerHook } from "./helpers";

/**
 * Issue 11, finding 12: GET /v1/webhooks returned at most 200 hooks and had no paging, so later
 * hooks could not be listed. It now pages like GET /v1/memory/facts: `limit` (1-200, default 50),
 * `cursor` = the previous page's `next_cursor`, null on the last page.
 */
type Page = { webhooks: { id: string; created_at: number }[]; next_cursor: string | null };

async function page(key: string, query: string): Promise<Page> {
  const res = await api(`/v1/webhooks${query}`, { key });
  expect(res.status, await res.clone().text()).toBe(200);
  return (await res.json()) as Page;
}

describe("webhook listing pages", () => {
  it("every one of 205 hooks is reachable, once, in creation order", async () => {
    const t = await createTenant();
    const ids: string[] = [];
    for (let i = 0; i < 205; i++) ids.push((await registerHook(t, { name: `h${i}` })).id);

    const first = await page(t.adminKey, "");
    expect(first.webhooks).toHaveLength(50); // the default page
    expect(first.next_cursor).not.toBeNull();

    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const p: Page = await page(t.adminKey, `?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
      seen.push(...p.webhooks.map((w) => w.id));
      cursor = p.next_cursor;
      pages++;
    } while (cursor !== null);
    expect(pages).toBe(2);
    // Hooks made in the same millisecond are ordered by id: compare as sets of (created_at, id).
    expect(seen).toHaveLength(205);
    expect(new Set(seen)).toEqual(new Set(ids));
    const all = await page(t.adminKey, "?limit=200");
    const ordered = [...all.webhooks].sort((a, b) => a.created_at - b.created_at || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    expect(all.webhooks).toEqual(ordered);
  });

  it("a page never shows another tenant's hooks; a bad cursor or limit is 400 BEM-011", async () => {
    const a = await createTenant();
    const b = await createTenant();
    const mine = await registerHook(a);
    await registerHook(b);
    const p = await page(a.adminKey, "?limit=1");
    expect(p.webhooks.map((w) => w.id)).toEqual([mine.id]);
    expect(p.next_cursor).toBeNull();
    for (const q of ["?cursor=nonsense", "?limit=0", "?limit=201"]) {
      const res = await api(`/v1/webhooks${q}`, { key: a.adminKey });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe("BEM-011");
    }
  });
});
