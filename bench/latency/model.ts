/**
 * A deployment's distances, simulated inside workerd: every call through the Durable
 * Object namespace, D1 and the upstream model waits the configured one-way delay out and
 * back, and is recorded, so a benchmark can tell how many remote round trips a request
 * waited for in series and how many milliseconds they added.
 */

export type LatencyModel = {
  /** Worker ↔ thread object (same colo), one way. */
  doMs: number;
  /** Worker or object ↔ the D1 primary (another continent), one way. */
  d1PrimaryMs: number;
  /** Worker or object ↔ a nearby D1 read replica, one way. */
  d1ReplicaMs: number;
  /** Upstream model: time to first byte of its answer. */
  upstreamTtftMs: number;
};

export const DEFAULT_MODEL: LatencyModel = { doMs: 2, d1PrimaryMs: 80, d1ReplicaMs: 5, upstreamTtftMs: 300 };

export type CallKind = "do" | "d1-primary" | "d1-replica" | "upstream";
export type Origin = "worker" | "object";
export type Call = {
  kind: CallKind;
  origin: Origin;
  what: string;
  start: number;
  end: number | undefined;
  /** For a call answered with a stream: when its first chunk arrived. */
  firstChunk?: number;
};

type State = { model: LatencyModel; on: boolean; calls: Call[] };
// Worker and objects share this isolate under the vitest pool, so one record serves both.
const state: State = ((globalThis as { __latency?: State }).__latency ??= { model: DEFAULT_MODEL, on: false, calls: [] });

export function configure(model: LatencyModel): void {
  state.model = model;
}
export function enable(on: boolean): void {
  state.on = on;
}
export function takeCalls(): Call[] {
  return state.calls.splice(0);
}
export const model = (): LatencyModel => state.model;

const sleep = (ms: number) => (ms > 0 && state.on ? new Promise<void>((r) => setTimeout(r, ms)) : Promise.resolve());

function begin(kind: CallKind, origin: Origin, what: string): Call | undefined {
  if (!state.on) return undefined;
  const c: Call = { kind, origin, what, start: performance.now(), end: undefined };
  state.calls.push(c);
  return c;
}

/** One remote round trip: out, the real work, back. */
async function roundTrip<T>(kind: CallKind, origin: Origin, what: string, oneWay: number, work: () => Promise<T>): Promise<T> {
  const c = begin(kind, origin, what);
  await sleep(oneWay);
  try {
    return await work();
  } finally {
    await sleep(oneWay);
    if (c) c.end = performance.now();
  }
}

/** A stream from the far side: each chunk arrives `oneWay` later than it was sent (order kept). */
function delayedStream(src: ReadableStream<Uint8Array>, oneWay: number, onFirst: () => void, onEnd: () => void): ReadableStream<Uint8Array> {
  let first = true;
  const reader = src.getReader();
  return new ReadableStream<Uint8Array>({
    start(controller) {
      const later = (f: () => void) => (state.on && oneWay > 0 ? setTimeout(f, oneWay) : f());
      void (async () => {
        for (;;) {
          let r: ReadableStreamReadResult<Uint8Array>;
          try {
            r = await reader.read();
          } catch (e) {
            later(() => controller.error(e));
            return;
          }
          if (r.done) {
            later(() => {
              onEnd();
              controller.close();
            });
            return;
          }
          const chunk = r.value;
          later(() => {
            if (first) onFirst();
            first = false;
            controller.enqueue(chunk);
          });
        }
      })();
    },
    cancel(reason) {
      onEnd();
      return reader.cancel(reason);
    },
  });
}

// ---- D1 ---------------------------------------------------------------------------

const isRead = (sql: string) => /^\s*(select|with)\b/i.test(sql);

class Stmt {
  constructor(
    readonly inner: D1PreparedStatement,
    readonly sql: string,
    private readonly where: (sql: string) => { kind: CallKind; ms: number },
    private readonly origin: Origin,
  ) {}
  bind(...values: unknown[]): Stmt {
    return new Stmt(this.inner.bind(...values), this.sql, this.where, this.origin);
  }
  private trip<T>(work: () => Promise<T>): Promise<T> {
    const w = this.where(this.sql);
    return roundTrip(w.kind, this.origin, this.sql.slice(0, 60), w.ms, work);
  }
  first<T>(col?: string): Promise<T | null> {
    return this.trip(() => (col === undefined ? this.inner.first<T>() : this.inner.first<T>(col)));
  }
  all<T>(): Promise<D1Result<T>> {
    return this.trip(() => this.inner.all<T>());
  }
  run<T>(): Promise<D1Result<T>> {
    return this.trip(() => this.inner.run<T>());
  }
  raw<T>(): Promise<T[]> {
    return this.trip(() => this.inner.raw<T>());
  }
}

type Session = { prepare(sql: string): Stmt; batch(s: Stmt[]): Promise<unknown>; getBookmark?(): string | null };

function wrapD1(db: D1Database, origin: Origin): D1Database {
  const primary = () => ({ kind: "d1-primary" as const, ms: state.model.d1PrimaryMs });
  const wrapper: Session & Record<string, unknown> = {
    prepare: (sql: string) => new Stmt(db.prepare(sql), sql, primary, origin),
    batch: (s: Stmt[]) => roundTrip("d1-primary", origin, "batch", state.model.d1PrimaryMs, () => db.batch(s.map((x) => x.inner))),
    exec: (sql: string) => roundTrip("d1-primary", origin, "exec", state.model.d1PrimaryMs, () => db.exec(sql)),
    dump: () => db.dump(),
    /** Reads in a session may be served by a nearby replica; writes always go to the primary. */
    withSession(constraint?: string) {
      const session = db.withSession(constraint);
      const fromPrimary = constraint === "first-primary";
      const where = (sql: string) => (isRead(sql) && !fromPrimary ? { kind: "d1-replica" as const, ms: state.model.d1ReplicaMs } : primary());
      return {
        prepare: (sql: string) => new Stmt(session.prepare(sql), sql, where, origin),
        // A batch of reads only is served by a replica like a single read; one write sends it to the primary.
        batch: (s: Stmt[]) => {
          const w = s.every((x) => isRead(x.sql)) && !fromPrimary ? { kind: "d1-replica" as const, ms: state.model.d1ReplicaMs } : primary();
          return roundTrip(w.kind, origin, "batch", w.ms, () => session.batch(s.map((x) => x.inner)));
        },
        getBookmark: () => session.getBookmark(),
      };
    },
  };
  // The wrappers hand back the statements' real results; only the types differ from D1Database's.
  return wrapper as unknown as D1Database;
}

// ---- Durable Object namespace -------------------------------------------------------

function wrapStub<T extends object>(stub: T, origin: Origin): T {
  return new Proxy(stub, {
    get(target, prop, receiver) {
      const v: unknown = Reflect.get(target, prop, receiver);
      if (typeof v !== "function" || typeof prop !== "string" || prop === "then") return v;
      return async (...args: unknown[]) => {
        const c = begin("do", origin, prop);
        await sleep(state.model.doMs);
        let out: unknown;
        try {
          out = await (target as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[prop]!(...args); // an RPC method: call it on the stub itself
        } catch (e) {
          await sleep(state.model.doMs);
          if (c) c.end = performance.now();
          throw e;
        }
        await sleep(state.model.doMs);
        // A streamed answer keeps the call open until its last chunk arrives.
        if (out instanceof ReadableStream)
          return delayedStream(
            out,
            state.model.doMs,
            () => c && (c.firstChunk = performance.now()),
            () => c && (c.end = performance.now()),
          );
        if (c) c.end = performance.now();
        return out;
      };
    },
  });
}

function wrapNamespace(ns: DurableObjectNamespace, origin: Origin): DurableObjectNamespace {
  return new Proxy(ns, {
    get(target, prop, receiver) {
      if (prop === "get") return (id: DurableObjectId, o?: DurableObjectNamespaceGetDurableObjectOptions) => wrapStub(target.get(id, o), origin);
      const v: unknown = Reflect.get(target, prop, receiver);
      return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

const wrapped = new WeakMap<object, Env>();

/** The env a Worker (or a thread object) sees in the modelled deployment. */
export function wrapEnv(env: Env, origin: Origin): Env {
  const hit = wrapped.get(env);
  if (hit) return hit;
  const db = wrapD1(env.DB, origin);
  const threads = wrapNamespace(env.THREADS, origin);
  const out = new Proxy(env, {
    get(target, prop, receiver) {
      if (prop === "DB") return db;
      if (prop === "THREADS") return threads;
      return Reflect.get(target, prop, receiver);
    },
  });
  wrapped.set(env, out);
  return out;
}

/** The upstream model: answers after its TTFT; later chunks follow at once. */
export async function upstreamDelay(origin: Origin, what: string): Promise<() => void> {
  const c = begin("upstream", origin, what);
  await sleep(state.model.upstreamTtftMs);
  return () => c && (c.end = performance.now());
}

// ---- critical path --------------------------------------------------------------------

/**
 * Remote round trips a request waited for in series (the model call excluded), from
 * the calls it waited for before `until` (its last byte, or its first for TTFB): those
 * that ended by then, and streamed calls whose first chunk arrived by then. Calls
 * still running at `until` (bookkeeping after the response) were not waited for. Calls
 * the object made during a Worker→object call are nested in it: that call counts
 * 1 + the longest chain inside it. Calls that overlap count once (they ran in parallel).
 */
export function serialRoundTrips(calls: Call[], until: number): number {
  const onPath = calls.filter((c) => c.start < until && ((c.end ?? Infinity) <= until || (c.firstChunk ?? Infinity) <= until));
  const top = onPath.filter((c) => c.origin === "worker");
  const inner = onPath.filter((c) => c.origin === "object");
  const weighted = top.map((c) => {
    if (c.kind === "upstream") return { c, w: 0 };
    if (c.kind !== "do") return { c, w: 1 };
    const end = c.end ?? Number.POSITIVE_INFINITY;
    const nested = inner.filter((x) => x.start >= c.start && x.start <= end && x.kind !== "upstream");
    return { c, w: 1 + longestChain(nested.map((x) => ({ c: x, w: 1 }))) };
  });
  return longestChain(weighted);
}

/** The same count, but a Worker→object call counts once whatever the object did inside it. */
export function workerRoundTrips(calls: Call[], until: number): number {
  return serialRoundTrips(
    calls.filter((c) => c.origin === "worker"),
    until,
  );
}

function longestChain(items: { c: Call; w: number }[]): number {
  const xs = [...items].sort((a, b) => a.c.start - b.c.start);
  const best: number[] = [];
  let max = 0;
  xs.forEach((x, i) => {
    let b = 0;
    for (let j = 0; j < i; j++) if ((xs[j]!.c.end ?? Infinity) <= x.c.start) b = Math.max(b, best[j]!);
    best[i] = b + x.w;
    max = Math.max(max, best[i]!);
  });
  return max;
}
