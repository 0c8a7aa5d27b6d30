import { AppError } from "../errors";
import { MemoryScope } from "../memory/scope";

/**
 * Grant patterns on a key: "*" (every scope of the tenant), "name:*" (every id of
 * one scope name), or an exact scope "name" / "name:id". Anything else is BEM-060.
 */
export function parseGrant(raw: string): string {
  if (raw === "*") return raw;
  if (raw.endsWith(":*")) {
    MemoryScope.new(raw.slice(0, -2)); // validates the name part
    if (raw.startsWith("system:")) throw new AppError("BEM-060", "The system scope takes no id");
    return raw;
  }
  return MemoryScope.parse(raw).toString();
}

export function grantMatches(grant: string, scope: MemoryScope): boolean {
  if (grant === "*") return true;
  if (grant.endsWith(":*")) return scope.id !== undefined && scope.name === grant.slice(0, -2);
  return grant === scope.toString();
}

export const grantsAllow = (grants: readonly string[], scope: MemoryScope): boolean => grants.some((g) => grantMatches(g, scope));
