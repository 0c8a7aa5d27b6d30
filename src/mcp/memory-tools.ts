import { decide } from "../auth/policy";
import { AppError } from "../core/errors";
import type { Principal } from "../core/principal";
import { D1FactsBackend } from "../memory/d1-facts-backend";
import { MemoryScope } from "../memory/scope";
import { defineTool, type Tool, type ToolCallRuntime } from "../pipeline/tools/define";
import { forgetTool, recallTool, recalledJson, rememberTool } from "../pipeline/tools/memory-tools";

/**
 * The memory tools as MCP clients see them. Outside a run there is no conversation and no list of
 * memory layers, so MCP's defaults are its own and its descriptions say them:
 * - `recall` without `scopes` searches every scope the key may read (an admin: all of its tenant's;
 *   a member: what its grants match, patterns included), and the operator's `system` rules;
 * - `remember` / `forget` (by key) without `scope` use the key's first exact grant it may write (a
 *   wildcard names no one scope); with none, they are refused with what to pass.
 * With scopes given, each tool is the run's own (same checks, same answers).
 */

const SCOPE_FIELD = { type: "string", maxLength: 200, description: "A scope `name:id` the key is granted, e.g. `organization:acme` or `session:<thread id>`" };

/** The run tool's schema with MCP's wording of the scope fields (no `session` shorthand: there is no conversation). */
function withScopeField(tool: Tool): Tool["inputSchema"] {
  const properties = { ...tool.inputSchema.properties };
  if (properties.scope) properties.scope = SCOPE_FIELD;
  if (properties.scopes) properties.scopes = { ...properties.scopes, items: SCOPE_FIELD };
  return { ...tool.inputSchema, properties };
}

function tenantKey(runtime: ToolCallRuntime): Principal {
  const p = runtime.caller?.principal;
  if (!p || p.kind === "operator") throw new AppError("BEM-143", "Memory tools need a tenant key");
  return p;
}

/** The key's first exact grant it may write, long-lived scopes before sessions; undefined when there is none. */
function defaultScope(p: Principal): string | undefined {
  const exact = p.grants.filter((g) => !g.includes("*")).map((g) => MemoryScope.parse(g));
  const ordered = [...exact.filter((s) => !s.isSession), ...exact.filter((s) => s.isSession)];
  return ordered.find((s) => decide(p, "write_scope", { scope: s }).allow)?.toString();
}

function passScope(p: Principal, tool: string): AppError {
  const may = p.grants.includes("*") ? "any scope of this tenant" : `a scope these grants match: ${p.grants.join(", ") || "(none)"}`;
  return new AppError("BEM-023", `'${tool}' over MCP has no conversation to default to: pass \`scope\`, e.g. organization:acme — ${may}`);
}

const mcpRemember = defineTool({
  name: rememberTool.name,
  description: `${rememberTool.description} Pass \`scope\` (e.g. \`organization:acme\`); without it the fact goes to the key's first exact grant it may write, and a key with none is told what to pass.`,
  inputSchema: withScopeField(rememberTool),
  handler: (input, runtime) => {
    const p = tenantKey(runtime);
    if (typeof input.scope === "string") return rememberTool.handler(input, runtime);
    const scope = defaultScope(p);
    if (scope === undefined) throw passScope(p, rememberTool.name);
    return rememberTool.handler({ ...input, scope }, runtime);
  },
});

const mcpRecall = defineTool({
  name: recallTool.name,
  description:
    "Search long-term memory for facts relevant to a query, by its words and its meaning (best first; `score` 1 for the best match, lower for weaker ones; `channels` says which found each). Without `scopes`, searches every scope this key may read: " +
    "all of this tenant's for an admin key, those its grants match for a member key, and the operator's `system` rules.",
  inputSchema: withScopeField(recallTool),
  handler: async (input, runtime) => {
    const p = tenantKey(runtime);
    if (Array.isArray(input.scopes)) return recallTool.handler(input, runtime);
    const withSystem = decide(p, "read_scope", { scope: MemoryScope.system() }).allow;
    const limit = typeof input.limit === "number" ? input.limit : 5;
    // The grants go into the query itself (before its limit), so no matching fact is cut by a page of others.
    const found = await new D1FactsBackend(runtime.caller!.env.DB, p.tenant, Date.now, undefined, runtime.caller!.budget).recall(
      { grants: p.grants, withSystem },
      String(input.query),
      limit,
    );
    return recalledJson(found.filter((f) => decide(p, "read_scope", { scope: MemoryScope.parse(f.scope) }).allow));
  },
});

const mcpForget = defineTool({
  name: forgetTool.name,
  description: "Delete a fact from long-term memory, by its `id` or by its `key` in `scope` (default: the key's first exact grant it may write).",
  inputSchema: withScopeField(forgetTool),
  handler: (input, runtime) => {
    const p = tenantKey(runtime);
    if (typeof input.scope === "string" || typeof input.key !== "string") return forgetTool.handler(input, runtime);
    const scope = defaultScope(p);
    if (scope === undefined) throw passScope(p, forgetTool.name);
    return forgetTool.handler({ ...input, scope }, runtime);
  },
});

export const MCP_MEMORY_TOOLS = [mcpRemember, mcpRecall, mcpForget] as const;
