import type { Principal } from "../core/principal";
import { LAST_ROUTE } from "../memory/report";
import { MemoryScope } from "../memory/scope";
import type { History, ThreadState } from "../thread/types";
import { decide } from "../auth/policy";

/**
 * What a reader sees of the memory report a run stored: the run's `last_route` channel (its
 * `memory_scopes` and `memory.facts`, in thread state and in history's writes) and a stored
 * Response's `edgeweave.memory`. The run's own key could read every scope it loaded (resolveScopes
 * checks read_scope), but any key reaching the thread reads the thread later: it sees the entries of
 * the scopes it may read (read_scope), the others only counted (`facts_hidden`,
 * `memory_scopes_hidden`), never their ids, scope names or keys. Applied at read time, so the stored
 * checkpoint and record stay whole (the admin sees everything; a later grant shows more).
 */

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** A stored scope string the reader may read; one that does not parse is not (fail closed). */
function readable(p: Principal): (scope: unknown) => boolean {
  const seen = new Map<string, boolean>();
  return (scope) => {
    if (typeof scope !== "string") return false;
    let ok = seen.get(scope);
    if (ok === undefined) {
      try {
        ok = decide(p, "read_scope", { scope: MemoryScope.parse(scope) }).allow;
      } catch {
        ok = false;
      }
      seen.set(scope, ok);
    }
    return ok;
  };
}

function reportFor(may: (scope: unknown) => boolean, report: unknown): unknown {
  if (!isRecord(report) || !Array.isArray(report.facts)) return report;
  const facts = report.facts.filter((f) => isRecord(f) && may(f.scope));
  const hidden = report.facts.length - facts.length;
  return hidden === 0 ? report : { ...report, facts, facts_hidden: hidden };
}

function routeFor(may: (scope: unknown) => boolean, route: unknown): unknown {
  if (!isRecord(route)) return route;
  let out = route;
  if (Array.isArray(route.memory_scopes)) {
    const scopes = route.memory_scopes.filter(may);
    const hidden = route.memory_scopes.length - scopes.length;
    if (hidden > 0) out = { ...out, memory_scopes: scopes, memory_scopes_hidden: hidden };
  }
  if ("memory" in route) {
    const memory = reportFor(may, route.memory);
    if (memory !== route.memory) out = { ...out, memory };
  }
  return out;
}

/** A thread state as `p` may see it (GET /v1/threads/:id/state). */
export function stateFor(p: Principal, state: ThreadState): ThreadState {
  if (!(LAST_ROUTE in state.channels)) return state;
  return { ...state, channels: { ...state.channels, [LAST_ROUTE]: routeFor(readable(p), state.channels[LAST_ROUTE]) } };
}

/** A history page as `p` may see it (GET /v1/threads/:id/history): each checkpoint's write of last_route. */
export function historyFor(p: Principal, history: History): History {
  const may = readable(p);
  return {
    ...history,
    checkpoints: history.checkpoints.map((cp) =>
      cp.writes.some((w) => w.op === "set" && w.channel === LAST_ROUTE)
        ? { ...cp, writes: cp.writes.map((w) => (w.op === "set" && w.channel === LAST_ROUTE ? { ...w, value: routeFor(may, w.value) } : w)) }
        : cp,
    ),
  };
}

/** A stored Response's body as `p` may see it (GET /v1/responses/:id): its `edgeweave.memory`. */
export function responseFor(p: Principal, body: Record<string, unknown>): Record<string, unknown> {
  const ew = body.edgeweave;
  if (!isRecord(ew) || !("memory" in ew)) return body;
  const memory = reportFor(readable(p), ew.memory);
  return memory === ew.memory ? body : { ...body, edgeweave: { ...ew, memory } };
}
