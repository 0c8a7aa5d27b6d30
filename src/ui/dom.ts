/** Small DOM helpers. Data reaches the page only as text (textContent / text nodes), never as HTML. */

type Attrs = Record<string, string | ((ev: Event) => void) | undefined>;
type Child = Node | string | null | undefined;

export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const node = document.getElementById(id);
  if (!node) throw new Error(`the page lacks #${id}`);
  return node as T;
}

/** An element; `text` sets its text, `class` its class, `on…` functions become listeners. */
export function el<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, children: Child[] = []): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined) continue;
    if (typeof v === "function") node.addEventListener(k.slice(2), v);
    else if (k === "text") node.textContent = v;
    else if (k === "class") node.className = v;
    else node.setAttribute(k, v);
  }
  for (const c of children) if (c !== null && c !== undefined) node.append(typeof c === "string" ? document.createTextNode(c) : c);
  return node;
}

export function clear(node: Node): void {
  while (node.firstChild) node.removeChild(node.firstChild);
}

export const pretty = (v: unknown): string => JSON.stringify(v, null, 2);
export const short = (id: string | null | undefined): string => (id ? id.slice(0, 12) : "none");
export const when = (ms: number | undefined): string => (typeof ms === "number" ? `${new Date(ms).toISOString().replace("T", " ").slice(0, 19)}Z` : "");
