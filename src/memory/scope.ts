import { z } from "@hono/zod-openapi";
import { OPERATOR_TENANT } from "../core/principal";
import { AppError } from "../core/errors";
import { isDotSegment } from "../core/path-segment";

const NAME = /^[a-z][a-z0-9_-]{0,31}$/;
/** Scope ids follow the thread id rule, since `session:<thread id>` is a scope. */
const ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * A memory layer: `system`, `organization:acme`, `session:<thread>`, `docset:d1`…
 * String form is `name` or `name:id` (split at the first colon; ids may contain colons).
 * Invalid names or ids are BEM-060.
 */
export class MemoryScope {
  private constructor(
    readonly name: string,
    readonly id: string | undefined,
  ) {}

  static new(name: string, id?: string): MemoryScope {
    if (typeof name !== "string" || !NAME.test(name)) {
      throw new AppError("BEM-060", "Scope name must match [a-z][a-z0-9_-]{0,31}");
    }
    if (id !== undefined && (typeof id !== "string" || !ID.test(id) || isDotSegment(id))) {
      throw new AppError("BEM-060", "Scope id must be 1-128 characters of A-Z a-z 0-9 . _ : -, not only dots");
    }
    if (name === "system" && id !== undefined) throw new AppError("BEM-060", "The system scope takes no id");
    if (name === "session" && id === undefined) throw new AppError("BEM-060", "A session scope needs a thread id");
    return new MemoryScope(name, id);
  }

  static system(): MemoryScope {
    return new MemoryScope("system", undefined);
  }

  static session(threadId: string): MemoryScope {
    return MemoryScope.new("session", threadId);
  }

  /** Accepts the string form or the seed's `{name, id?}` object form. */
  static parse(raw: unknown): MemoryScope {
    if (typeof raw === "string") {
      const at = raw.indexOf(":");
      return at < 0 ? MemoryScope.new(raw) : MemoryScope.new(raw.slice(0, at), raw.slice(at + 1));
    }
    if (typeof raw === "object" && raw !== null && !Array.isArray(raw)) {
      const { name, id } = raw as { name?: unknown; id?: unknown };
      if (typeof name === "string" && (id === undefined || id === null || typeof id === "string")) {
        return MemoryScope.new(name, id ?? undefined);
      }
    }
    throw new AppError("BEM-060", "A scope is a string 'name' or 'name:id', or an object {name, id?}");
  }

  get isSystem(): boolean {
    return this.name === "system";
  }

  get isSession(): boolean {
    return this.name === "session";
  }

  equals(other: MemoryScope): boolean {
    return this.name === other.name && this.id === other.id;
  }

  toString(): string {
    return this.id === undefined ? this.name : `${this.name}:${this.id}`;
  }

  toJSON(): string {
    return this.toString();
  }
}

/** Wire form of a scope. Kept loose here so handlers can answer BEM-060 rather than a generic 400. */
export const ScopeInput = z.union([z.string(), z.object({ name: z.string(), id: z.string().nullish() })]).openapi("MemoryScope", {
  description: "`name` or `name:id` (e.g. `organization:acme`), or `{name, id?}`. Names: [a-z][a-z0-9_-]{0,31}; ids like thread ids.",
  example: "organization:acme",
});
export type ScopeInput = z.infer<typeof ScopeInput>;

/** The tenant whose rows hold this scope: `system` is operator-wide (tenant ''), every other scope the caller's. */
export const ownerTenant = (scope: MemoryScope, tenant: string): string => (scope.isSystem ? OPERATOR_TENANT : tenant);
