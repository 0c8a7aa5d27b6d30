/**
 * The thread inspector (/ui), bundled by scripts/build-assets.ts into dist/public/ui/inspector.js.
 * Threads (searchable by id), the messages and channels at any checkpoint, the checkpoint timeline
 * with its branches, fork, the routing of the last turn up to the viewed checkpoint and the facts it
 * loaded (and why), memory for any scopes, and — on their own tabs — a thread's LangGraph checkpoints
 * and the spend budgets over the key (both read-only). Ids are shown whole, each with a Copy button. No framework; data reaches the page
 * only as text (see dom.ts), the key only sessionStorage (see api.ts).
 */
import { api, ApiError, dropKey, getKey, setKey } from "./api";
import { budgetRows, budgetSummary } from "./budgets";
import { byId, clear, copyable, el, pretty, when } from "./dom";
import { checkpointView } from "./langgraph";
import { lanes } from "./lanes";
import { reportRows, reportSummary } from "./memory-report";
import type { History, HistoryEntry, LangGraphTuple, LastRoute, LoadedContext, Message, ThreadList, ThreadState, Usage, Write } from "./types";

const view: {
  thread: string | null;
  checkpoint: string | null;
  history: HistoryEntry[];
  historyBefore: string | null;
  threadsBefore: string | null;
  /** The LangGraph list shown: its thread, namespace (undefined: all) and the oldest id shown. */
  lg: { thread: string; ns: string | undefined; before: string | null } | null;
} = {
  thread: null,
  checkpoint: null,
  history: [],
  historyBefore: null,
  threadsBefore: null,
  lg: null,
};
/** LangGraph checkpoints per page. */
const LG_PAGE = 20;
const enc = encodeURIComponent;

function say(text: string, isError = false): void {
  const s = byId("status");
  s.textContent = text;
  s.className = isError ? "error" : "";
}

/** An event handler whose failure is shown in the status line; a rejected key is dropped. */
function guarded(fn: () => Promise<unknown> | void): (ev?: Event) => void {
  return (ev) => {
    ev?.preventDefault();
    Promise.resolve()
      .then(fn)
      .catch((err: unknown) => {
        if (err instanceof ApiError && err.rejectsKey) forgetKey();
        say(err instanceof Error ? err.message : String(err), true);
      });
  };
}

// ---- threads ----
async function loadThreads(append: boolean): Promise<void> {
  const query = byId<HTMLInputElement>("thread-query").value.trim();
  // Conversations apart from one-off Responses calls' threads (kept 30 days): the server filters, so paging holds.
  const kind = byId<HTMLSelectElement>("thread-kind").value;
  const q = `/v1/threads?limit=50${query ? `&query=${enc(query)}` : ""}${kind ? `&kind=${enc(kind)}` : ""}${append && view.threadsBefore ? `&before=${enc(view.threadsBefore)}` : ""}`;
  const page = await api<ThreadList>("GET", q);
  const list = byId("threads");
  if (!append) clear(list);
  for (const t of page.threads) {
    const b = el("button", { type: "button", class: "thread-link", "data-thread": t.thread_id, onclick: guarded(() => openThread(t.thread_id)) }, [
      el("span", { class: "thread-id", text: t.thread_id }),
      el("span", { class: "muted", text: `updated ${when(t.updated_at)}` }),
      ...(t.kind === "response" && t.expires_at !== null
        ? [el("span", { class: "muted thread-kind", text: `one-off response · kept until ${when(t.expires_at)}` })]
        : []),
    ]);
    list.append(el("li", {}, [b]));
  }
  if (!append && page.threads.length === 0)
    list.append(el("li", { class: "muted", text: query ? `No thread id contains "${query}".` : "No threads for this key's tenant yet." }));
  view.threadsBefore = page.next_before;
  byId("more-threads").hidden = !page.next_before;
  const n = list.querySelectorAll(".thread-link").length;
  say(`Loaded ${n} thread(s)${query ? ` whose id contains "${query}"` : ""}${page.next_before ? "; more below" : ""}.`);
}

async function openThread(id: string): Promise<void> {
  view.thread = id;
  view.checkpoint = null;
  markActiveThread();
  byId("thread").hidden = false;
  byId("thread-title").textContent = id;
  clear(byId("memory"));
  const [head] = await Promise.all([loadState(null), loadHistory(false)]);
  // The scopes the last run loaded (recorded with its routing); a thread without runs: its session.
  const scopes = lastRoute(head)?.memory_scopes;
  byId<HTMLInputElement>("scopes").value = scopes?.length ? scopes.join(", ") : `session:${id}`;
  byId<HTMLInputElement>("lg-thread").value = id;
  say(`Opened thread ${id}.`);
}

// ---- state at a checkpoint ----
const lastRoute = (st: ThreadState): LastRoute | undefined => {
  const r = st.channels.last_route;
  return r && typeof r === "object" ? (r as LastRoute) : undefined;
};

async function loadState(checkpointId: string | null): Promise<ThreadState> {
  if (!view.thread) throw new Error("Open a thread first");
  const q = `/v1/threads/${enc(view.thread)}/state${checkpointId ? `?checkpoint_id=${enc(checkpointId)}` : ""}`;
  const st = await api<ThreadState>("GET", q);
  view.checkpoint = checkpointId;
  const viewing = byId("viewing");
  clear(viewing);
  viewing.append(checkpointId ? "Viewing the state at checkpoint " : "Viewing the head: checkpoint ", copyable(st.checkpoint_id), ` (step ${st.step})`);
  byId("to-head").hidden = !checkpointId;
  // The routing and memory shown are those of the last turn up to the viewed checkpoint: say which.
  byId("h-routing").textContent = checkpointId ? `Routing of the last turn at checkpoint ${st.checkpoint_id} (step ${st.step})` : "Routing of the last turn";
  byId("h-last-memory").textContent = checkpointId ? "Memory that turn loaded" : "Memory the last run loaded";
  renderMessages(st.channels.messages);
  renderChannels(st.channels, st.reducers);
  renderRouting(lastRoute(st));
  renderLastMemory(lastRoute(st));
  markSelected(st.checkpoint_id);
  return st;
}

function contentText(content: Message["content"]): string {
  if (content === null || content === undefined) return "";
  if (typeof content === "string") return content;
  return content.map((p) => (p.type === "text" ? p.text : `[${p.type}]`)).join("\n");
}

function argsText(raw: string): string {
  try {
    return pretty(JSON.parse(raw));
  } catch {
    return raw;
  }
}

function renderMessages(messages: Message[]): void {
  const list = byId("messages");
  clear(list);
  if (messages.length === 0) list.append(el("li", { class: "muted", text: "No messages at this checkpoint." }));
  for (const m of messages) {
    const head = el("div", { class: "msg-head" }, [
      el("span", { class: `role role-${m.role}`, text: m.role }),
      m.name ? el("span", { class: "muted", text: m.name }) : null,
      el("span", { class: "muted", text: when(m.created_at) }),
      el("code", { class: "muted", text: m.id }),
    ]);
    const body: HTMLElement[] = [];
    const text = contentText(m.content);
    if (m.role === "tool") {
      body.push(
        el("details", { class: "tool" }, [el("summary", { text: `tool result${m.tool_call_id ? ` for ${m.tool_call_id}` : ""}` }), el("pre", { text })]),
      );
    } else if (text) {
      body.push(el("p", { class: "msg-text", text }));
    }
    for (const call of m.tool_calls ?? []) {
      body.push(
        el("details", { class: "tool" }, [
          el("summary", { text: `tool call: ${call.function.name} (${call.id})` }),
          el("pre", { text: argsText(call.function.arguments) }),
        ]),
      );
    }
    if (m.metadata) body.push(el("details", { class: "meta" }, [el("summary", { text: "metadata" }), el("pre", { text: pretty(m.metadata) })]));
    list.append(el("li", { class: "msg" }, [head, ...body]));
  }
}

function renderChannels(channels: ThreadState["channels"], reducers: ThreadState["reducers"]): void {
  const box = byId("channels");
  clear(box);
  box.append(el("p", { class: "muted", text: `messages: ${channels.messages.length} message(s)` }));
  for (const [name, value] of Object.entries(channels)) {
    if (name === "messages") continue;
    box.append(
      el("details", { class: "channel" }, [el("summary", { text: `${name} (${reducers[name] ?? "last_value"})` }), el("pre", { text: pretty(value) })]),
    );
  }
}

function renderRouting(route: LastRoute | undefined): void {
  const box = byId("routing");
  clear(box);
  if (!route) {
    box.append(el("p", { class: "muted", text: "No routed turn at this checkpoint." }));
    return;
  }
  const dl = el("dl", { class: "kv" });
  const candidates = route.candidates ? route.candidates.join(", ") : String(route.candidate_count ?? "");
  for (const [k, v] of [
    ["model", route.model],
    ["reason", route.reason],
    ["candidates", candidates],
    [
      "memory scopes",
      [...(route.memory_scopes ?? []), ...(route.memory_scopes_hidden ? [`${route.memory_scopes_hidden} this key cannot read`] : [])].join(", "),
    ],
  ] as const) {
    dl.append(el("dt", { text: k }), el("dd", { text: v }));
  }
  box.append(dl);
  box.append(el("details", {}, [el("summary", { text: `attempts (${(route.attempts ?? []).length})` }), el("pre", { text: pretty(route.attempts ?? []) })]));
  // Older checkpoints stored the whole trace; new ones keep the summary (POST /v1/route gives the trace).
  if (route.trace !== undefined) box.append(el("details", {}, [el("summary", { text: "trace" }), el("pre", { text: pretty(route.trace) })]));
}

function renderLastMemory(route: LastRoute | undefined): void {
  const box = byId("last-memory");
  clear(box);
  const report = route?.memory;
  if (!report) {
    box.append(
      el("p", {
        class: "muted",
        text: route ? "This run's checkpoint has no memory report (written before reports were stored)." : "No run at this checkpoint.",
      }),
    );
    return;
  }
  box.append(el("p", { class: "muted", text: reportSummary(report) }));
  if (report.facts.length === 0) return;
  const head = el(
    "tr",
    {},
    ["fact", "scope", "kind", "key", "tokens", "loaded", "why"].map((h) => el("th", { text: h })),
  );
  const body = reportRows(report).map((r) =>
    el("tr", { class: r.loaded ? "loaded" : "left-out", "data-fact": r.id }, [
      el("td", {}, [copyable(r.id)]),
      el("td", { text: r.scope }),
      el("td", { text: r.kind }),
      el("td", { text: r.key }),
      el("td", { text: String(r.tokens) }),
      el("td", { text: r.loaded ? "yes" : "no" }),
      el("td", { class: "why", text: r.why }),
    ]),
  );
  box.append(el("table", { class: "report" }, [el("thead", {}, [head]), el("tbody", {}, body)]));
}

// ---- history timeline ----
async function loadHistory(append: boolean): Promise<void> {
  if (!view.thread) return;
  const q = `/v1/threads/${enc(view.thread)}/history?limit=100${append && view.historyBefore ? `&before=${enc(view.historyBefore)}` : ""}`;
  const page = await api<History>("GET", q);
  view.history = append ? [...view.history, ...page.checkpoints] : page.checkpoints;
  view.historyBefore = page.next_before;
  byId("more-history").hidden = !page.next_before;
  renderHistory();
}

function writesSummary(writes: Write[]): string {
  return writes.map((w) => (w.op === "put" ? `put ${w.message.role}` : w.op === "set" ? `set ${w.channel}` : w.op)).join(", ");
}

function renderHistory(): void {
  const list = byId("history");
  clear(list);
  const info = lanes(view.history);
  for (const cp of view.history) {
    const n = info.lane.get(cp.id) ?? 0;
    const forks = info.children.get(cp.id)?.length ?? 0;
    const badges: HTMLElement[] = [el("span", { class: `lane lane-${n % 6}`, text: `branch ${n + 1}` })];
    if (cp.is_head) badges.push(el("span", { class: "badge head", text: "HEAD" }));
    if (forks > 1) badges.push(el("span", { class: "badge", text: `${forks} branches` }));
    list.append(
      el("li", { class: `cp lane-border-${n % 6}`, "data-checkpoint": cp.id, "data-head": String(cp.is_head) }, [
        el("div", { class: "cp-head" }, [
          ...badges,
          el("strong", { text: `step ${cp.step}` }),
          el("span", { class: "muted", text: cp.source }),
          copyable(cp.id, "cp-id"),
        ]),
        el("div", { class: "muted small cp-parent" }, [
          "parent ",
          copyable(cp.parent_id),
          ` · ${when(cp.created_at)}${cp.writes.length ? ` · ${writesSummary(cp.writes)}` : ""}`,
        ]),
        el("div", { class: "cp-actions" }, [
          el("button", { type: "button", class: "view-cp", onclick: guarded(() => loadState(cp.id)) }, ["View state"]),
          el("button", { type: "button", class: "fork-cp", onclick: guarded(() => fork(cp.id)) }, ["Fork from here"]),
        ]),
      ]),
    );
  }
  markSelected(null);
}

function markSelected(checkpointId: string | null): void {
  const target = checkpointId ?? view.checkpoint;
  for (const li of document.querySelectorAll("#history .cp")) {
    li.classList.toggle("selected", target ? li.getAttribute("data-checkpoint") === target : li.getAttribute("data-head") === "true");
  }
}

async function fork(checkpointId: string): Promise<void> {
  if (!view.thread) return;
  const cp = await api<{ id: string }>("POST", `/v1/threads/${enc(view.thread)}/fork`, { checkpoint_id: checkpointId });
  await loadHistory(false);
  await loadState(null);
  say(`Forked from ${checkpointId}: new head ${cp.id} on a new branch.`);
}

// ---- memory ----
async function loadMemory(): Promise<void> {
  const scopes = byId<HTMLInputElement>("scopes")
    .value.split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  const maxTokens = Number(byId<HTMLInputElement>("max-tokens").value) || 4096;
  const ctx = await api<LoadedContext>("POST", "/v1/memory/context", { scopes, max_tokens: maxTokens });
  const box = byId("memory");
  clear(box);
  box.append(el("p", { class: "muted", text: `${ctx.tokens} token(s); dropped ${ctx.dropped.facts} fact(s)${ctx.dropped.turns ? " and older turns" : ""}` }));
  const ol = el("ol", { class: "facts" });
  for (const m of ctx.messages) {
    ol.append(
      el("li", { class: m.role === "system" ? "fact" : "turn" }, [el("span", { class: `role role-${m.role}`, text: m.role }), " ", contentText(m.content)]),
    );
  }
  if (ctx.messages.length === 0) ol.append(el("li", { class: "muted", text: "Nothing loaded for these scopes." }));
  box.append(ol);
}

// ---- LangGraph checkpoints (read-only, through the checkpointer's list route) ----
async function loadLangGraph(append: boolean): Promise<void> {
  if (!append) {
    const thread = byId<HTMLInputElement>("lg-thread").value.trim();
    if (!thread) throw new Error("Enter a LangGraph thread id");
    const ns = byId<HTMLInputElement>("lg-ns").value.trim();
    view.lg = { thread, ns: ns === "" ? undefined : ns, before: null };
  }
  const lg = view.lg;
  if (!lg) return;
  const body = { limit: LG_PAGE, ...(lg.ns !== undefined ? { ns: lg.ns } : {}), ...(append && lg.before ? { before: lg.before } : {}) };
  // A page is also cut at about 4 MiB of values: next_before says where the next one starts.
  const { tuples, next_before } = await api<{ tuples: LangGraphTuple[]; next_before?: string }>("POST", `/v1/langgraph/threads/${enc(lg.thread)}/list`, body);
  const list = byId("lg-checkpoints");
  if (!append) clear(list);
  for (const t of tuples) list.append(renderCheckpoint(t));
  if (!append && tuples.length === 0)
    list.append(el("li", { class: "muted", text: `No LangGraph checkpoints in ${lg.thread}${lg.ns !== undefined ? ` (namespace "${lg.ns}")` : ""}.` }));
  lg.before = next_before ?? tuples.at(-1)?.id ?? null;
  byId("more-lg").hidden = tuples.length < LG_PAGE && next_before === undefined;
  say(`Loaded ${list.querySelectorAll("li.lg-cp").length} LangGraph checkpoint(s) of ${lg.thread}.`);
}

function renderCheckpoint(t: LangGraphTuple): HTMLElement {
  const v = checkpointView(t);
  const versions = el("dl", { class: "kv" });
  for (const [channel, version] of v.channelVersions) versions.append(el("dt", { text: channel }), el("dd", {}, [el("code", { text: version })]));
  const writes = el("ol", { class: "lg-writes" });
  for (const w of v.pendingWrites) writes.append(el("li", {}, [el("code", { text: `${w.channel} ← task ${w.task}` }), el("pre", { text: pretty(w.value) })]));
  return el("li", { class: "cp lg-cp", "data-checkpoint": v.id, "data-ns": t.ns }, [
    el("div", { class: "cp-head" }, [
      el("span", { class: "badge", text: v.ns }),
      el("strong", { text: v.step === "" ? "step ?" : `step ${v.step}` }),
      el("span", { class: "muted", text: v.source }),
      copyable(v.id, "lg-id"),
    ]),
    el("div", {
      class: "muted small lg-parent",
      text: `parent ${v.parent ?? "none"}${v.ts ? ` · ${v.ts}` : ""}${v.channels.length ? ` · values stored: ${v.channels.join(", ")}` : ""}`,
    }),
    el("details", { class: "lg-versions" }, [el("summary", { text: `channel versions (${v.channelVersions.length})` }), versions]),
    el("details", { class: "lg-pending" }, [el("summary", { text: `pending writes (${v.pendingWrites.length})` }), writes]),
    el("details", { class: "lg-metadata" }, [el("summary", { text: "metadata" }), el("pre", { text: pretty(v.metadata) })]),
  ]);
}

// ---- spend budgets (read-only: GET /v1/usage lists those over the key, as the access policy lets it see them) ----
async function loadBudgets(): Promise<void> {
  const { budgets } = await api<Usage>("GET", "/v1/usage");
  const box = byId("budgets");
  clear(box);
  box.append(el("p", { class: "muted", text: budgetSummary(budgets) }));
  if (budgets.length === 0) return;
  const head = el(
    "tr",
    {},
    ["budget", "over", "limit", "window", "spent", "held", "left", "resets", "thresholds"].map((h) => el("th", { text: h })),
  );
  const body = budgetRows(budgets).map((r) =>
    el("tr", { class: r.exhausted ? "exhausted" : "", "data-budget": r.id }, [
      el("td", {}, [copyable(r.id)]),
      ...[r.over, r.limit, r.window, r.spent, r.held, r.left, r.resets, r.thresholds].map((text) => el("td", { text })),
    ]),
  );
  box.append(el("table", { class: "report budgets" }, [el("thead", {}, [head]), el("tbody", {}, body)]));
  say(`Loaded ${budgets.length} budget(s).`);
}

// ---- key ----
function keyChanged(): void {
  const has = getKey() !== null;
  byId("key-state").textContent = has ? "Key set for this tab." : "No key set.";
  byId("forget").hidden = !has;
  byId<HTMLButtonElement>("refresh").disabled = !has;
  byId("tabs").hidden = !has;
  if (!has) showTab("thread");
}

/** Forgets the key and everything loaded with it (lists, their "more" buttons and cursors); also when the server rejects the key. */
function forgetKey(): void {
  dropKey();
  clear(byId("threads"));
  clear(byId("lg-checkpoints"));
  clear(byId("budgets"));
  for (const more of ["more-threads", "more-history", "more-lg"]) byId(more).hidden = true;
  byId("thread").hidden = true;
  Object.assign(view, { thread: null, checkpoint: null, history: [], historyBefore: null, threadsBefore: null, lg: null });
  keyChanged();
}

/**
 * The operator key is the first key a newcomer holds, and it reads no threads (BEM-022): say
 * what to do instead of showing the refusal. It is not kept.
 */
function operatorKeyAdvice(err: unknown): unknown {
  if (!(err instanceof ApiError) || err.code !== "BEM-022" || !err.detail.startsWith("The operator key")) return err;
  forgetKey();
  return new Error(
    "That is the operator key: it creates tenants and their keys, but reads no threads. Create a tenant admin key with it and paste that one: " +
      `curl -s ${location.origin}/v1/admin/tenants/<tenant>/keys -H "authorization: Bearer <operator key>" -H "content-type: application/json" -d '{"role":"admin"}' ` +
      "(docs/getting-started.md, step 1, also creates the tenant).",
  );
}

// ---- tabs: the thread view, the LangGraph checkpoints or the budgets (each reachable from the top of the page) ----
function showTab(tab: "thread" | "langgraph" | "budgets"): void {
  byId("thread-view").hidden = tab !== "thread";
  byId("langgraph-panel").hidden = tab !== "langgraph";
  byId("budgets-panel").hidden = tab !== "budgets";
  for (const [id, name] of [
    ["tab-thread", "thread"],
    ["tab-langgraph", "langgraph"],
    ["tab-budgets", "budgets"],
  ] as const) {
    byId(id).classList.toggle("active", tab === name);
    byId(id).setAttribute("aria-selected", String(tab === name));
  }
}

function markActiveThread(): void {
  for (const b of document.querySelectorAll(".thread-link")) b.classList.toggle("active", b.getAttribute("data-thread") === view.thread);
}

document.addEventListener("DOMContentLoaded", () => {
  byId("key-form").addEventListener(
    "submit",
    guarded(async () => {
      const input = byId<HTMLInputElement>("key");
      const value = input.value.trim();
      input.value = "";
      if (!value) throw new Error("Enter a key");
      setKey(value);
      keyChanged();
      await loadThreads(false).catch((err: unknown) => {
        throw operatorKeyAdvice(err);
      });
    }),
  );
  byId("forget").addEventListener("click", () => {
    forgetKey();
    say("Key forgotten.");
  });
  byId("refresh").addEventListener(
    "click",
    guarded(() => loadThreads(false)),
  );
  byId("more-threads").addEventListener(
    "click",
    guarded(() => loadThreads(true)),
  );
  // Searching asks the server (ids containing the text), so it finds threads past the first page.
  let searchTimer: ReturnType<typeof setTimeout> | undefined;
  byId("thread-query").addEventListener("input", () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(
      guarded(() => (getKey() ? loadThreads(false).then(markActiveThread) : undefined)),
      250,
    );
  });
  byId("thread-kind").addEventListener(
    "change",
    guarded(() => (getKey() ? loadThreads(false).then(markActiveThread) : undefined)),
  );
  byId("thread-search").addEventListener(
    "submit",
    guarded(() => loadThreads(false).then(markActiveThread)),
  );
  byId("tab-thread").addEventListener("click", () => showTab("thread"));
  byId("tab-langgraph").addEventListener("click", () => showTab("langgraph"));
  // Opening the tab asks afresh: spend moves with every turn.
  byId("tab-budgets").addEventListener(
    "click",
    guarded(() => {
      showTab("budgets");
      return loadBudgets();
    }),
  );
  byId("refresh-budgets").addEventListener("click", guarded(loadBudgets));
  byId("more-history").addEventListener(
    "click",
    guarded(() => loadHistory(true)),
  );
  byId("to-head").addEventListener(
    "click",
    guarded(() => loadState(null)),
  );
  byId("memory-form").addEventListener("submit", guarded(loadMemory));
  byId("lg-form").addEventListener(
    "submit",
    guarded(() => loadLangGraph(false)),
  );
  byId("more-lg").addEventListener(
    "click",
    guarded(() => loadLangGraph(true)),
  );
  keyChanged();
  if (getKey()) guarded(() => loadThreads(false))();
});
