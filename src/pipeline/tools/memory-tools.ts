import { authorize, decide } from "../../auth/policy";
import { assertFactRoom, factQuotaOf } from "../../auth/quotas";
import { AppError } from "../../core/errors";
import { D1FactsBackend, type RecalledFact } from "../../memory/d1-facts-backend";
import { expiryOf, validateFactText, validateKey, validateKind } from "../../memory/facts";
import { MemoryScope } from "../../memory/scope";
import type { ToolCaller } from "../runtime";
import { defineTool, type ToolCallRuntime } from "./define";
import { contentOf, inSpan } from "../../core/trace";

/**
 * Long-term memory as server tools: the model remembers, recalls and forgets facts
 * with the grants of the key that runs the turn (injected by the pipeline as
 * runtime.caller, never visible to the model). A refusal (scope outside the grants,
 * unknown fact, bad input) is thrown as a coded AppError, which the tool executor
 * turns into an "Error: …" tool message the model can read — never a failed run.
 */

export const RECALL_MAX = 20;
const SCOPE_FIELD = { type: "string", maxLength: 200, description: "`name:id` (e.g. `organization:acme`), or `session` for this conversation" } as const;

function callerOf(runtime: ToolCallRuntime): ToolCaller {
  if (!runtime.caller || runtime.caller.principal.kind === "operator") throw new AppError("BEM-143", "Memory tools run only inside a tenant's turn");
  return runtime.caller;
}

/** `session` names this run's thread; anything else is a scope string. */
function scopeOf(raw: string, caller: ToolCaller): MemoryScope {
  if (raw === "session") {
    if (caller.threadId === undefined) throw new AppError("BEM-143", "This run has no thread, so no session scope");
    return MemoryScope.session(caller.threadId);
  }
  return MemoryScope.parse(raw);
}

/**
 * Where a fact goes when the model names no scope: the run's first long-lived layer the key
 * may write (e.g. `organization:acme`), else this conversation's session if the key may write it.
 */
function defaultWriteScope(caller: ToolCaller): MemoryScope {
  const layers = caller.scopes.map((s) => MemoryScope.parse(s)).filter((s) => !s.isSystem);
  for (const scope of [...layers.filter((s) => !s.isSession), ...layers.filter((s) => s.isSession)]) {
    try {
      authorize(caller.principal, "write_scope", { scope: scope });
      return scope;
    } catch {
      // not writable by this key: try the next layer
    }
  }
  throw new AppError("BEM-023", "No memory layer of this run is writable with this key; name a scope the key is granted");
}

/**
 * On the primary, through a session of the run's when there is one: the thread's kept bookmark then covers the tool's writes.
 * A search by meaning holds its embedder call against the run's budgets.
 */
const store = (caller: ToolCaller) => new D1FactsBackend(caller.facts?.() ?? caller.env.DB, caller.principal.tenant, Date.now, undefined, caller.budget);

export const rememberTool = defineTool({
  name: "remember",
  description:
    "Store a durable fact in long-term memory (a preference, a decision, something about the user). " +
    "Give a `key` for facts that can change (e.g. `home-city`): remembering with the same key replaces the old text.",
  inputSchema: {
    type: "object",
    properties: {
      scope: SCOPE_FIELD,
      kind: { type: "string", maxLength: 32, description: "A short lowercase category, e.g. `preference`, `profile`, `decision`" },
      text: { type: "string", minLength: 1, maxLength: 8192 },
      key: { type: "string", maxLength: 128, description: "Stable name of the fact within its scope" },
      ttl_seconds: { type: "integer", minimum: 1, description: "Forget the fact after this many seconds" },
    },
    required: ["kind", "text"],
  },
  handler: async (input, runtime) => {
    const caller = callerOf(runtime);
    const scope = typeof input.scope === "string" ? scopeOf(input.scope, caller) : defaultWriteScope(caller);
    const kind = validateKind(String(input.kind));
    const text = validateFactText(String(input.text));
    const key = typeof input.key === "string" ? validateKey(input.key) : null;
    const now = Date.now();
    const expiresAt = expiryOf({ ttl_seconds: typeof input.ttl_seconds === "number" ? input.ttl_seconds : null }, now);
    authorize(caller.principal, "write_scope", { scope: scope });
    const facts = store(caller);
    // A keyed fact replaces the key's text if there is one, so the caller does not choose: an upsert.
    const operation = key === null ? "create_memory" : "upsert_memory";
    const attrs = { "gen_ai.operation.name": operation, "gen_ai.memory.store.id": String(scope), "gen_ai.memory.record.count": 1 };
    const fact = await inSpan(runtime.trace, operation, "client", attrs, async (span) => {
      await assertFactRoom(caller.env, caller.principal.tenant, facts, scope, key); // 413 BEM-018 at the tenant's cap
      const f = await facts.remember(scope, kind, text, { key, expiresAt, now, maxFacts: factQuotaOf(caller.env, caller.principal.tenant) });
      span?.set({ "gen_ai.memory.record.id": f.id, "gen_ai.memory.records": contentOf(span, () => [{ id: f.id, content: text, metadata: { kind, key } }]) });
      return f;
    });
    caller.factsWritten?.();
    return JSON.stringify({
      id: fact.id,
      scope: fact.scope,
      kind: fact.kind,
      key: fact.key,
      version: fact.version,
      replaced: fact.replaced,
      existing: fact.existing,
      expires_at: fact.expires_at,
    });
  },
});

export const recallTool = defineTool({
  name: "recall",
  description:
    "Search long-term memory for facts relevant to a query, by its words and its meaning (best first; `score` 1 for the best match, lower for weaker ones; `channels` says which found each). Defaults to this conversation's memory layers.",
  inputSchema: {
    type: "object",
    properties: {
      query: { type: "string", minLength: 1, maxLength: 2000 },
      scopes: { type: "array", items: SCOPE_FIELD, maxItems: 16 },
      limit: { type: "integer", minimum: 1, maximum: RECALL_MAX },
    },
    required: ["query"],
  },
  handler: async (input, runtime) => {
    const caller = callerOf(runtime);
    let scopes: MemoryScope[];
    if (Array.isArray(input.scopes)) {
      scopes = input.scopes.map((s) => scopeOf(String(s), caller));
      for (const s of scopes) authorize(caller.principal, "read_scope", { scope: s });
    } else {
      scopes = caller.scopes.map((s) => MemoryScope.parse(s)).filter((s) => decide(caller.principal, "read_scope", { scope: s }).allow);
    }
    const limit = typeof input.limit === "number" ? input.limit : 5;
    const query = String(input.query);
    const attrs = {
      "gen_ai.operation.name": "search_memory",
      "gen_ai.memory.store.id": scopes.map(String).join(","),
      "gen_ai.request.top_k": limit,
      "gen_ai.memory.query.text": contentOf(runtime.trace, () => query),
    };
    const facts = await inSpan(runtime.trace, "search_memory", "client", attrs, async (span) => {
      const found = await store(caller).recall({ scopes }, query, limit);
      span?.set({
        "gen_ai.memory.record.count": found.length,
        "gen_ai.memory.records": contentOf(span, () => found.map((f) => ({ id: f.id, content: f.text, score: f.score }))),
      });
      return found;
    });
    return recalledJson(facts);
  },
});

/** A recall's answer as the tools return it (the run's and MCP's alike). */
export const recalledJson = (facts: readonly RecalledFact[]): string =>
  JSON.stringify({ facts: facts.map((f) => ({ id: f.id, scope: f.scope, kind: f.kind, key: f.key, text: f.text, score: f.score, channels: f.channels })) });

export const forgetTool = defineTool({
  name: "forget",
  description: "Delete a fact from long-term memory, by its `id` or by its `key` (in `scope`, default: the first writable layer).",
  inputSchema: {
    type: "object",
    properties: { id: { type: "string", maxLength: 200 }, key: { type: "string", maxLength: 128 }, scope: SCOPE_FIELD },
  },
  handler: async (input, runtime) => {
    const caller = callerOf(runtime);
    const facts = store(caller);
    const hasId = typeof input.id === "string";
    if (hasId === (typeof input.key === "string")) throw new AppError("BEM-143", "Give exactly one of id or key");
    // Whether a fact is there is told only within the grants: a scope outside them is refused before
    // the lookup (by key), and a fact in one reads as absent (by id), so a refusal reveals no key or id.
    const byId = async () => {
      const found = await facts.get(String(input.id));
      return found && decide(caller.principal, "read_scope", { scope: MemoryScope.parse(found.scope) }).allow ? found : null;
    };
    const byKey = async () => {
      const scope = typeof input.scope === "string" ? scopeOf(input.scope, caller) : defaultWriteScope(caller);
      authorize(caller.principal, "write_scope", { scope });
      return facts.getByKey(scope, validateKey(String(input.key)));
    };
    const attrs = { "gen_ai.operation.name": "delete_memory", "gen_ai.memory.record.count": 1 };
    const fact = await inSpan(runtime.trace, "delete_memory", "client", attrs, async (span) => {
      const found = hasId ? await byId() : await byKey();
      if (!found) throw new AppError("BEM-061", hasId ? `No fact with id '${String(input.id)}'` : `No fact with key '${String(input.key)}' in that scope`);
      span?.set({ "gen_ai.memory.store.id": found.scope, "gen_ai.memory.record.id": found.id });
      authorize(caller.principal, "write_scope", { scope: MemoryScope.parse(found.scope) });
      if (!(await facts.forget(found.id))) throw new AppError("BEM-061", "The fact was already gone");
      return found;
    });
    caller.factsWritten?.();
    return JSON.stringify({ id: fact.id, scope: fact.scope, deleted: true });
  },
});

export const MEMORY_TOOLS = [rememberTool, recallTool, forgetTool] as const;
