/**
 * The inspector's calls to the API: the key from this tab's sessionStorage (never
 * localStorage or cookies), sent as a bearer header, with no credentials and no cache.
 */
const KEY = "edgeweave.inspector.key";

export const getKey = (): string | null => sessionStorage.getItem(KEY);
export const setKey = (key: string): void => sessionStorage.setItem(KEY, key);
export const dropKey = (): void => sessionStorage.removeItem(KEY);

/** A coded API error; `status` tells a rejected key (401) from a key that lacks a grant (403) and other failures. */
export class ApiError extends Error {
  readonly status: number;
  /** The catalog code (BEM-…), when the body had one. */
  readonly code: string | undefined;
  /** The server's message without the code. */
  readonly detail: string;
  constructor(message: string, status: number, code?: string, detail = message) {
    super(message);
    this.status = status;
    this.code = code;
    this.detail = detail;
  }
  get rejectsKey(): boolean {
    return this.status === 401;
  }
}

export async function api<T>(method: "GET" | "POST", path: string, body?: unknown): Promise<T> {
  const key = getKey();
  if (!key) throw new Error("Enter an API key first");
  const headers: Record<string, string> = { authorization: `Bearer ${key}` };
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: "no-store", credentials: "omit" });
  const data: unknown = res.status === 204 ? null : await res.json().catch(() => null);
  if (!res.ok) {
    const e = (data as { error?: { code: string; message: string } } | null)?.error;
    throw new ApiError(e ? `${e.code}: ${e.message}` : `HTTP ${res.status}`, res.status, e?.code, e?.message);
  }
  return data as T;
}
