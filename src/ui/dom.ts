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

/**
 * An id shown whole (never cut: a checkpoint id is pasted into `checkpoint_id`) with a Copy button.
 * Without clipboard access (an insecure origin, a denied permission) the button selects the id instead.
 */
export function copyable(id: string | null | undefined, cls = ""): HTMLElement {
  if (!id) return el("span", { class: "muted", text: "none" });
  const code = el("code", { class: `id ${cls}`.trim(), text: id });
  const button = el("button", { type: "button", class: "copy", title: `Copy ${id}`, "aria-label": `Copy ${id}` }, ["Copy"]);
  button.addEventListener("click", () => {
    const done = (label: string) => {
      button.textContent = label;
      setTimeout(() => (button.textContent = "Copy"), 1500);
    };
    const select = () => {
      getSelection()?.selectAllChildren(code);
      done("Selected");
    };
    if (navigator.clipboard) navigator.clipboard.writeText(id).then(() => done("Copied"), select);
    else select();
  });
  return el("span", { class: "id-chip" }, [code, button]);
}
export const when = (ms: number | undefined): string => (typeof ms === "number" ? `${new Date(ms).toISOString().replace("T", " ").slice(0, 19)}Z` : "");
