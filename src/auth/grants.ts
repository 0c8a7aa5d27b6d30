import { AppError } from "../errors";
import { MemoryScope } from "../memory/scope";

/** What may follow `name:` in a prefix pattern: the start of a scope id. */
const ID_PREFIX = /^[A-Za-z0-9._:-]{0,127}$/;

/**
 * Grant patterns on a key or hook: "*" (every scope of the tenant), "name:*" (every id
 * of one scope name), "name:prefix*" (every id starting with prefix, e.g.
 * "session:support-*"), or an exact scope "name" / "name:id". Anything else is BEM-060.
 */
export function parseGrant(raw: string): string {
  if (raw === "*") return raw;
  if (raw.endsWith("*")) {
    const at = raw.indexOf(":");
    if (at < 0) throw new AppError("BEM-060", "A wildcard grant is '*' or 'name:prefix*'");
    MemoryScope.new(raw.slice(0, at), "x"); // validates the name part (and refuses `system`, which takes no id)
    if (!ID_PREFIX.test(raw.slice(at + 1, -1))) throw new AppError("BEM-060", "A grant's id prefix is up to 127 characters of A-Z a-z 0-9 . _ : -");
    return raw;
  }
  return MemoryScope.parse(raw).toString();
}

export function grantMatches(grant: string, scope: MemoryScope): boolean {
  if (grant === "*") return true;
  if (grant.endsWith("*")) {
    const at = grant.indexOf(":");
    return scope.id !== undefined && scope.name === grant.slice(0, at) && scope.id.startsWith(grant.slice(at + 1, -1));
  }
  return grant === scope.toString();
}

export const grantsAllow = (grants: readonly string[], scope: MemoryScope): boolean => grants.some((g) => grantMatches(g, scope));

/** True when every scope `inner` matches is matched by some pattern of `outer` (a hook cannot get more than its registrar). */
export function grantWithin(outer: readonly string[], inner: string): boolean {
  if (outer.includes("*")) return true;
  if (inner === "*") return false;
  if (!inner.endsWith("*")) return grantsAllow(outer, MemoryScope.parse(inner));
  const at = inner.indexOf(":");
  const name = inner.slice(0, at);
  const prefix = inner.slice(at + 1, -1);
  return outer.some((g) => g.endsWith("*") && g.indexOf(":") > 0 && g.slice(0, g.indexOf(":")) === name && prefix.startsWith(g.slice(g.indexOf(":") + 1, -1)));
}
