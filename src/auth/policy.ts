import { AppError } from "../core/errors";
import { MemoryScope, type ScopeInput } from "../memory/scope";
import { grantsAllow } from "./grants";
import type { Principal, Role } from "../core/principal";

/**
 * The one place that decides who may do what. Routes declare the action they
 * need (src/edge/access.ts checks the role column before anything is read);
 * handlers and the pipeline ask `authorize` about the scope, thread or tenant
 * the request names. The access table of docs/reference/access.md is generated from POLICY.
 *
 * The thread rule, in one sentence: a key or hook reaches thread `t` (lists it,
 * reads it, runs turns on it) iff one of its grants matches `session:t` — tenant
 * admins hold "*" and so reach every thread of their tenant — and rewriting `t`'s
 * stored history also needs the rewrite right of `rewrite_thread`.
 * Every decision is inside the caller's own tenant: no rule ever crosses tenants.
 */

/** How one role is decided for one action. */
export const RULES = {
  yes: "allowed",
  no: "refused (BEM-022)",
  "own tenant": "only for its own tenant (BEM-022 otherwise)",
  "system only": "only the `system` scope",
  "system + grants": "`system`, and scopes its grants match",
  grants: "what its grants match (`system` excluded)",
  "any granted": "what its grants match, `system` included when granted",
  "if registered":
    "only if the hook was registered for it (`write_facts: true` to write facts, `rewrite_history: true` to rewrite history), and its grants match (`system` excluded)",
} as const;
export type Rule = keyof typeof RULES;

type Row = { what: string } & Record<Role, Rule>;

/** Every action a route or a run can need, by role. Data, not prose: the code below evaluates it. */
export const POLICY = {
  any_key: { what: "list models, dry-run routing, read the tenant's usage", operator: "yes", admin: "yes", member: "yes", webhook: "no" },
  manage_tenants: { what: "create and list tenants", operator: "yes", admin: "no", member: "no", webhook: "no" },
  manage_keys: { what: "create, list and revoke a tenant's keys", operator: "yes", admin: "own tenant", member: "no", webhook: "no" },
  manage_budgets: { what: "create, list, change and delete the tenant's spend budgets", operator: "no", admin: "own tenant", member: "no", webhook: "no" },
  manage_webhooks: { what: "register, list and delete webhooks", operator: "no", admin: "yes", member: "no", webhook: "no" },
  queue_tasks: { what: "queue memory tasks; read task status and dead letters", operator: "yes", admin: "yes", member: "no", webhook: "no" },
  run: { what: "run an agent turn (chat, invoke, Responses, a webhook delivery)", operator: "no", admin: "yes", member: "yes", webhook: "yes" },
  read_scope: {
    what: "read scope S's facts, or load S into a run (client-named or the agent's layers)",
    operator: "system only",
    admin: "system + grants",
    member: "system + grants",
    webhook: "system + grants",
  },
  write_scope: { what: "remember or forget facts in scope S", operator: "system only", admin: "grants", member: "grants", webhook: "if registered" },
  reach_namespace: {
    what: "read, write, search and list LangGraph store items in namespace N (its first labels name a scope; items never load into runs)",
    operator: "no",
    admin: "any granted",
    member: "any granted",
    webhook: "no",
  },
  reach_thread: {
    what: "list thread t, read its state and history, run turns on it; the same for conversation t (create, read, metadata, add items) and the responses stored on t (read, continue at the head) (grant matches session:t)",
    operator: "no",
    admin: "grants",
    member: "grants",
    webhook: "grants",
  },
  rewrite_thread: {
    what: "rewrite a thread's stored history: repair (POST state), fork, delete, summarize, `checkpoint_id` on a run, a resend that branches, a `previous_response_id` older than the head, delete a stored response, delete a conversation or one of its items, an agent with delete_old / summarization / trim with persist; LangGraph: delete or prune a thread's checkpoints, replace a checkpoint another key wrote (same id) or its own once a later one exists or another key's continues it (other than by the same put again), write a checkpoint id ahead of the clock (it would stay the newest) or a new one below its namespace's newest (inside history; clock skew of at most 5 minutes aside), replace a special pending write on a checkpoint another key's checkpoint has continued (another key's: on a continued one), add new pending writes to a checkpoint another key's checkpoint has continued, or name a channel version another key stored with other content",
    operator: "no",
    admin: "grants",
    member: "no",
    webhook: "if registered",
  },
} as const satisfies Record<string, Row>;
export type Action = keyof typeof POLICY;

/** What a request names, for the rules that depend on it. */
export type Resource = { scope?: MemoryScope; thread?: string; tenant?: string };

export type Decision = { allow: true } | { allow: false; code: "BEM-022" | "BEM-023" | "BEM-025"; message: string };

const ALLOW: Decision = { allow: true };
const deny = (code: "BEM-022" | "BEM-023" | "BEM-025", message: string): Decision => ({ allow: false, code, message });

/** The decision for one action on what the request names (omit the resource for the role check alone). */
export function decide(p: Principal, action: Action, r: Resource = {}): Decision {
  const rule: Rule = POLICY[action][p.role];
  const who = p.role === "operator" ? "The operator key" : p.role === "admin" ? "An admin key" : `A ${p.role === "webhook" ? "webhook" : `${p.role} key`}`;
  const scope = r.scope ?? (r.thread !== undefined ? MemoryScope.session(r.thread) : undefined);
  const onThread = r.thread !== undefined;
  const outside = (): Decision =>
    onThread
      ? deny("BEM-025", `Thread '${r.thread}' is outside this key's grants (it needs a grant matching 'session:${r.thread}')`)
      : deny("BEM-023", `Scope '${scope}' is outside this key's grants`);
  switch (rule) {
    case "yes":
      return ALLOW;
    case "no": {
      const what = POLICY[action].what.split(/[:;(]/)[0]!.trim();
      // The operator key is often the only key a newcomer holds: say what to use instead.
      return p.role === "operator"
        ? deny("BEM-022", `${who} cannot ${what}; use a tenant key (POST /v1/admin/tenants/{id}/keys creates one)`)
        : deny("BEM-022", `${who} may not ${what}`);
    }
    case "own tenant":
      return r.tenant === undefined || r.tenant === p.tenant ? ALLOW : deny("BEM-022", `${who} manages only its own tenant`);
    case "system only":
      return !scope || scope.isSystem ? ALLOW : deny("BEM-023", `${who} holds only the system scope; use a tenant key for '${scope}'`);
    case "system + grants":
      return !scope || scope.isSystem || grantsAllow(p.grants, scope) ? ALLOW : outside();
    case "any granted":
      return !scope || grantsAllow(p.grants, scope) ? ALLOW : outside();
    case "grants":
      if (!scope) return ALLOW;
      if (scope.isSystem) return deny("BEM-022", "Only the operator key writes system facts");
      return grantsAllow(p.grants, scope) ? ALLOW : outside();
    case "if registered": {
      const writes = action === "write_scope";
      if ((writes ? p.writeFacts : p.rewriteHistory) !== true)
        return writes
          ? deny("BEM-022", `${who} may not write facts unless registered with write_facts`)
          : deny("BEM-022", `${who} may not rewrite a thread's stored history unless registered with rewrite_history`);
      if (scope?.isSystem) return deny("BEM-022", "Only the operator key writes system facts");
      return !scope || grantsAllow(p.grants, scope) ? ALLOW : outside();
    }
  }
}

/** Throws the coded 403 unless the decision allows. */
export function authorize(p: Principal, action: Action, r: Resource = {}): void {
  const d = decide(p, action, r);
  if (!d.allow) throw new AppError(d.code, d.message);
}

/** A thread run or read: reach, plus the rewrite right when the request rewrites stored history. */
export function authorizeThread(p: Principal, thread: string, rewrites: boolean): void {
  authorize(p, "reach_thread", { thread });
  if (rewrites) authorize(p, "rewrite_thread", { thread });
}

/**
 * Which threads `GET /v1/threads` may list for the caller, as SQL-ready parts:
 * every thread, or ids equal to one of `exact` / starting with one of `prefixes`.
 */
export function readableThreads(p: Principal): { all: true } | { all: false; exact: string[]; prefixes: string[] } {
  if (POLICY.reach_thread[p.role] === "no") return { all: false, exact: [], prefixes: [] };
  const exact: string[] = [];
  const prefixes: string[] = [];
  for (const g of p.grants) {
    if (g === "*" || g === "session:*") return { all: true };
    if (!g.startsWith("session:")) continue;
    if (g.endsWith("*")) prefixes.push(g.slice("session:".length, -1));
    else exact.push(g.slice("session:".length));
  }
  return { all: false, exact, prefixes };
}

export type ScopeRequest = {
  principal: Principal;
  /** The run's thread; undefined for a stateless run (no session layer then). */
  sessionId?: string;
  /** Layers configured for the agent (models.yaml); bare "session" means this run's session. */
  agentScopes?: readonly ScopeInput[];
  /** The client's memory_scopes: replace the agent's layers of facts. */
  requested?: readonly ScopeInput[];
};

/**
 * The memory layers of one run: the client's `requested` list if given, else the
 * agent's layers, else none; a run on a thread always has its session layer too (appended
 * unless named), since that layer is the thread's own turns: a client naming extra layers
 * (`X-Edgeweave-Memory-Scopes: organization:acme`) must not lose its conversation.
 * Either way every layer must be readable by the caller (read_scope): one scope
 * outside the grants is BEM-023 for the whole request — an agent cannot widen a
 * key, and nothing is silently dropped.
 */
export function resolveScopes(req: ScopeRequest): MemoryScope[] {
  const session = req.sessionId !== undefined ? MemoryScope.session(req.sessionId) : undefined;
  const parse = (raw: unknown): MemoryScope | undefined => (raw === "session" ? session : MemoryScope.parse(raw));
  let scopes: MemoryScope[];
  if (req.requested !== undefined) {
    // A client's bare "session" on a run without a thread names a layer that is not there: refused as
    // its object form {name: "session"} is, not dropped (the agent's own "session" is simply skipped).
    if (session === undefined && req.requested.includes("session"))
      throw new AppError("BEM-060", "memory_scopes names 'session', but this run has no thread: send thread_id (or X-Thread-Id), or leave it out");
    scopes = req.requested.map(parse).filter((s): s is MemoryScope => s !== undefined);
  } else {
    scopes = (req.agentScopes ?? []).map(parse).filter((s): s is MemoryScope => s !== undefined);
  }
  if (session && !scopes.some((s) => s.equals(session))) scopes.push(session);
  for (const s of scopes) authorize(req.principal, "read_scope", { scope: s });
  const seen = new Set<string>();
  return scopes.filter((s) => !seen.has(s.toString()) && (seen.add(s.toString()), true));
}

export const ACCESS_START = "<!-- access:start -->";
export const ACCESS_END = "<!-- access:end -->";

/** The section of docs/reference/access.md (markers included), written by scripts/access-table.ts and checked by test/docs/access-table.test.ts. */
export const accessSection = (): string =>
  [
    ACCESS_START,
    "<!-- Generated from POLICY in src/auth/policy.ts by `npx tsx scripts/access-table.ts`; do not edit by hand. -->",
    "",
    policyTable(),
    ACCESS_END,
  ].join("\n");

/** The access table: one row per action, one column per role. */
export function policyTable(): string {
  const roles: Role[] = ["operator", "admin", "member", "webhook"];
  const lines = [
    "| action | what | operator | tenant admin | member | webhook |",
    "| --- | --- | --- | --- | --- | --- |",
    ...Object.entries(POLICY).map(([action, row]) => `| \`${action}\` | ${row.what} | ${roles.map((r) => row[r]).join(" | ")} |`),
    "",
    "Rules: " +
      Object.entries(RULES)
        .map(([k, v]) => `**${k}** — ${v}`)
        .join("; ") +
      ".",
  ];
  return lines.join("\n");
}
