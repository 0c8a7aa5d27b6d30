/**
 * The inspector's browser script, served as /ui/inspector.js. Plain ES2020, no
 * framework and no build step. Every piece of data reaches the page through
 * textContent (never innerHTML), and the key lives only in sessionStorage.
 * Kept free of backticks and dollar-brace so it can sit in this template literal.
 */
export const INSPECTOR_JS = String.raw`"use strict";
(function () {
  var KEY = "edgeweave.inspector.key";
  var view = { thread: null, checkpoint: null, history: [], historyBefore: null, threadsBefore: null };

  function $(id) { return document.getElementById(id); }
  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      var v = attrs[k];
      if (k === "text") node.textContent = v;
      else if (k === "class") node.className = v;
      else if (k.indexOf("on") === 0) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v);
    });
    (children || []).forEach(function (c) {
      if (c !== null && c !== undefined) node.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    });
    return node;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
  function pretty(v) { return JSON.stringify(v, null, 2); }
  function short(id) { return id ? String(id).slice(0, 12) : "none"; }
  function when(ms) { return typeof ms === "number" ? new Date(ms).toISOString().replace("T", " ").slice(0, 19) + "Z" : ""; }
  function say(text, isError) {
    var s = $("status");
    s.textContent = text;
    s.className = isError ? "error" : "";
  }
  function getKey() { return sessionStorage.getItem(KEY); }

  async function api(method, path, body) {
    var key = getKey();
    if (!key) throw new Error("Enter an API key first");
    var headers = { authorization: "Bearer " + key };
    if (body !== undefined) headers["content-type"] = "application/json";
    var res = await fetch(path, {
      method: method,
      headers: headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store",
      credentials: "omit",
    });
    var data = null;
    if (res.status !== 204) data = await res.json().catch(function () { return null; });
    if (!res.ok) {
      var e = data && data.error;
      var failure = new Error(e ? e.code + ": " + e.message : "HTTP " + res.status);
      failure.status = res.status;
      throw failure;
    }
    return data;
  }
  function guarded(fn) {
    return function (ev) {
      if (ev && ev.preventDefault) ev.preventDefault();
      Promise.resolve(fn.apply(this, arguments)).catch(function (err) { say(err.message || String(err), true); });
    };
  }
  var enc = encodeURIComponent;

  // ---- threads ----
  async function loadThreads(append) {
    var q = "/v1/threads?limit=50" + (append && view.threadsBefore ? "&before=" + enc(view.threadsBefore) : "");
    var page = await api("GET", q);
    var list = $("threads");
    if (!append) clear(list);
    page.threads.forEach(function (t) {
      var b = el("button", { type: "button", class: "thread-link", "data-thread": t.thread_id, onclick: guarded(function () { return openThread(t.thread_id); }) }, [
        el("span", { class: "thread-id", text: t.thread_id }),
        el("span", { class: "muted", text: "updated " + when(t.updated_at) }),
      ]);
      list.appendChild(el("li", {}, [b]));
    });
    if (!append && page.threads.length === 0) list.appendChild(el("li", { class: "muted", text: "No threads for this key's tenant yet." }));
    view.threadsBefore = page.next_before;
    $("more-threads").hidden = !page.next_before;
    say("Loaded " + list.querySelectorAll("button").length + " thread(s).");
  }

  async function openThread(id) {
    view.thread = id;
    view.checkpoint = null;
    document.querySelectorAll(".thread-link").forEach(function (b) { b.classList.toggle("active", b.getAttribute("data-thread") === id); });
    $("thread").hidden = false;
    $("thread-title").textContent = id;
    clear($("memory"));
    var results = await Promise.all([loadState(null), loadHistory(false)]);
    // The scopes the last run loaded facts from (recorded with its routing); else the session.
    var last = results[0] && results[0].channels.last_route;
    $("scopes").value = last && last.memory_scopes ? last.memory_scopes.join(", ") : "session:" + id;
    say("Opened thread " + id + ".");
  }

  // ---- state at a checkpoint ----
  async function loadState(checkpointId) {
    var q = "/v1/threads/" + enc(view.thread) + "/state" + (checkpointId ? "?checkpoint_id=" + enc(checkpointId) : "");
    var st = await api("GET", q);
    view.checkpoint = checkpointId;
    $("viewing").textContent = checkpointId
      ? "Viewing the state at checkpoint " + short(st.checkpoint_id) + " (step " + st.step + ")"
      : "Viewing the head: checkpoint " + short(st.checkpoint_id) + " (step " + st.step + ")";
    $("to-head").hidden = !checkpointId;
    renderMessages(st.channels.messages || []);
    renderChannels(st.channels, st.reducers || {});
    renderRouting(st.channels.last_route);
    markSelected(st.checkpoint_id);
    return st;
  }

  function contentText(content) {
    if (content === null || content === undefined) return "";
    if (typeof content === "string") return content;
    return content.map(function (p) { return p.type === "text" ? p.text : "[" + p.type + "]"; }).join("\n");
  }
  function argsText(raw) {
    try { return pretty(JSON.parse(raw)); } catch (e) { return String(raw); }
  }

  function renderMessages(messages) {
    var list = $("messages");
    clear(list);
    if (messages.length === 0) list.appendChild(el("li", { class: "muted", text: "No messages at this checkpoint." }));
    messages.forEach(function (m) {
      var head = el("div", { class: "msg-head" }, [
        el("span", { class: "role role-" + m.role, text: m.role }),
        m.name ? el("span", { class: "muted", text: m.name }) : null,
        el("span", { class: "muted", text: when(m.created_at) }),
        el("code", { class: "muted", text: m.id }),
      ]);
      var body = [];
      var text = contentText(m.content);
      if (m.role === "tool") {
        body.push(el("details", { class: "tool" }, [
          el("summary", { text: "tool result" + (m.tool_call_id ? " for " + m.tool_call_id : "") }),
          el("pre", { text: text }),
        ]));
      } else if (text) {
        body.push(el("p", { class: "msg-text", text: text }));
      }
      (m.tool_calls || []).forEach(function (call) {
        body.push(el("details", { class: "tool" }, [
          el("summary", { text: "tool call: " + call.function.name + " (" + call.id + ")" }),
          el("pre", { text: argsText(call.function.arguments) }),
        ]));
      });
      if (m.metadata) body.push(el("details", { class: "meta" }, [el("summary", { text: "metadata" }), el("pre", { text: pretty(m.metadata) })]));
      list.appendChild(el("li", { class: "msg" }, [head].concat(body)));
    });
  }

  function renderChannels(channels, reducers) {
    var box = $("channels");
    clear(box);
    var names = Object.keys(channels).filter(function (n) { return n !== "messages"; });
    box.appendChild(el("p", { class: "muted", text: "messages: " + (channels.messages || []).length + " message(s)" }));
    names.forEach(function (n) {
      box.appendChild(el("details", { class: "channel" }, [
        el("summary", { text: n + " (" + (reducers[n] || "last_value") + ")" }),
        el("pre", { text: pretty(channels[n]) }),
      ]));
    });
  }

  function renderRouting(route) {
    var box = $("routing");
    clear(box);
    if (!route) {
      box.appendChild(el("p", { class: "muted", text: "No routed turn at this checkpoint." }));
      return;
    }
    var dl = el("dl", { class: "kv" });
    [["model", route.model], ["reason", route.reason], ["candidates", route.candidates ? route.candidates.join(", ") : route.candidate_count]].forEach(function (kv) {
      dl.appendChild(el("dt", { text: kv[0] }));
      dl.appendChild(el("dd", { text: kv[1] === undefined ? "" : String(kv[1]) }));
    });
    box.appendChild(dl);
    box.appendChild(el("details", {}, [el("summary", { text: "attempts (" + (route.attempts || []).length + ")" }), el("pre", { text: pretty(route.attempts || []) })]));
    if (route.trace) box.appendChild(el("details", {}, [el("summary", { text: "trace" }), el("pre", { text: pretty(route.trace) })]));
  }

  // ---- history timeline ----
  async function loadHistory(append) {
    var q = "/v1/threads/" + enc(view.thread) + "/history?limit=100" + (append && view.historyBefore ? "&before=" + enc(view.historyBefore) : "");
    var page = await api("GET", q);
    view.history = append ? view.history.concat(page.checkpoints) : page.checkpoints;
    view.historyBefore = page.next_before;
    $("more-history").hidden = !page.next_before;
    renderHistory();
  }

  // Lanes: a checkpoint continues its parent's lane when it is the parent's first child;
  // any later child of the same parent opens a new lane (a branch).
  function lanes(checkpoints) {
    var oldestFirst = checkpoints.slice().sort(function (a, b) { return a.created_at - b.created_at || a.step - b.step; });
    var lane = {}, children = {}, next = 0;
    oldestFirst.forEach(function (cp) {
      var p = cp.parent_id;
      var siblings = p ? (children[p] = children[p] || []) : null;
      if (p && siblings.length === 0 && lane[p] !== undefined) lane[cp.id] = lane[p];
      else lane[cp.id] = next++;
      if (siblings) siblings.push(cp.id);
    });
    return { lane: lane, children: children };
  }

  function writesSummary(writes) {
    return writes.map(function (w) {
      if (w.op === "put") return "put " + w.message.role;
      if (w.op === "set") return "set " + w.channel;
      return w.op;
    }).join(", ");
  }

  function renderHistory() {
    var list = $("history");
    clear(list);
    var info = lanes(view.history);
    view.history.forEach(function (cp) {
      var n = info.lane[cp.id];
      var forks = (info.children[cp.id] || []).length;
      var badges = [el("span", { class: "lane lane-" + (n % 6), text: "branch " + (n + 1) })];
      if (cp.is_head) badges.push(el("span", { class: "badge head", text: "HEAD" }));
      if (forks > 1) badges.push(el("span", { class: "badge", text: forks + " branches" }));
      list.appendChild(el("li", { class: "cp lane-border-" + (n % 6), "data-checkpoint": cp.id, "data-head": String(cp.is_head) }, [
        el("div", { class: "cp-head" }, badges.concat([
          el("strong", { text: "step " + cp.step }),
          el("span", { class: "muted", text: cp.source }),
          el("code", { text: short(cp.id) }),
        ])),
        el("div", { class: "muted small", text: "parent " + short(cp.parent_id) + " · " + when(cp.created_at) + (cp.writes.length ? " · " + writesSummary(cp.writes) : "") }),
        el("div", { class: "cp-actions" }, [
          el("button", { type: "button", class: "view-cp", onclick: guarded(function () { return loadState(cp.id); }) }, ["View state"]),
          el("button", { type: "button", class: "fork-cp", onclick: guarded(function () { return fork(cp.id); }) }, ["Fork from here"]),
        ]),
      ]));
    });
    markSelected(null);
  }

  function markSelected(checkpointId) {
    var target = checkpointId || view.checkpoint;
    document.querySelectorAll("#history .cp").forEach(function (li) {
      var id = li.getAttribute("data-checkpoint");
      li.classList.toggle("selected", target ? id === target : li.getAttribute("data-head") === "true");
    });
  }

  async function fork(checkpointId) {
    var cp = await api("POST", "/v1/threads/" + enc(view.thread) + "/fork", { checkpoint_id: checkpointId });
    await loadHistory(false);
    await loadState(null);
    say("Forked from " + short(checkpointId) + ": new head " + short(cp.id) + " on a new branch.");
  }

  // ---- memory ----
  async function loadMemory() {
    var scopes = $("scopes").value.split(",").map(function (s) { return s.trim(); }).filter(Boolean);
    var maxTokens = Number($("max-tokens").value) || 4096;
    var ctx = await api("POST", "/v1/memory/context", { scopes: scopes, max_tokens: maxTokens });
    var box = $("memory");
    clear(box);
    box.appendChild(el("p", { class: "muted", text: ctx.tokens + " token(s); dropped " + ctx.dropped.facts + " fact(s)" + (ctx.dropped.turns ? " and older turns" : "") }));
    var ol = el("ol", { class: "facts" });
    ctx.messages.forEach(function (m) {
      ol.appendChild(el("li", { class: m.role === "system" ? "fact" : "turn" }, [el("span", { class: "role role-" + m.role, text: m.role }), " ", contentText(m.content)]));
    });
    if (ctx.messages.length === 0) ol.appendChild(el("li", { class: "muted", text: "Nothing loaded for these scopes." }));
    box.appendChild(ol);
  }

  // ---- key ----
  function forgetKey() {
    sessionStorage.removeItem(KEY);
    clear($("threads"));
    $("thread").hidden = true;
    keyChanged();
  }
  function keyChanged() {
    var has = Boolean(getKey());
    $("key-state").textContent = has ? "Key set for this tab." : "No key set.";
    $("forget").hidden = !has;
    $("refresh").disabled = !has;
  }

  document.addEventListener("DOMContentLoaded", function () {
    $("key-form").addEventListener("submit", guarded(async function () {
      var input = $("key");
      var value = input.value.trim();
      input.value = "";
      if (!value) throw new Error("Enter a key");
      sessionStorage.setItem(KEY, value);
      keyChanged();
      try {
        await loadThreads(false);
      } catch (err) {
        // A key the server rejects is not kept: the page must not claim a key is set.
        if (err.status === 401 || err.status === 403) forgetKey();
        throw err;
      }
    }));
    $("forget").addEventListener("click", function () {
      forgetKey();
      say("Key forgotten.");
    });
    $("refresh").addEventListener("click", guarded(function () { return loadThreads(false); }));
    $("more-threads").addEventListener("click", guarded(function () { return loadThreads(true); }));
    $("more-history").addEventListener("click", guarded(function () { return loadHistory(true); }));
    $("to-head").addEventListener("click", guarded(function () { return loadState(null); }));
    $("memory-form").addEventListener("submit", guarded(loadMemory));
    keyChanged();
    if (getKey()) loadThreads(false).catch(function (err) {
      if (err.status === 401 || err.status === 403) forgetKey();
      say(err.message, true);
    });
  });
})();
`;
