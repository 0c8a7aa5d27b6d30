import type { Principal } from "../auth/principal";
import { AppError } from "../errors";

export type Role = Principal["role"];

/** Roles that may repair, fork or delete stored state. */
export const ADMIN_ROLES: readonly Role[] = ["admin", "operator"];

/** Throws BEM-022 unless the principal has one of the roles; `action` names what was refused. */
export function requireRole(principal: Principal, allowed: readonly Role[], action: string): void {
  if (!allowed.includes(principal.role)) {
    throw new AppError("BEM-022", `A ${principal.role} key may not ${action}`);
  }
}
