// V8's sampling profiler over a `wrangler dev` inspector (the Chrome DevTools protocol on its websocket), and
// a profile summed per function: the benches that say where a turn's CPU goes share these.

type CallFrame = { functionName: string; url: string; lineNumber: number; columnNumber: number };
type ProfileNode = { id: number; callFrame: CallFrame; children?: number[] };
export type Profile = { nodes: ProfileNode[]; startTime: number; endTime: number; samples: number[]; timeDeltas: number[] };

/** A Chrome DevTools protocol session over the inspector's websocket (the worker's target, not the asset router's). */
export async function devtools(port: number) {
  const targets = (await (await fetch(`http://127.0.0.1:${port}/json`)).json()) as { webSocketDebuggerUrl: string; title?: string }[];
  const target = targets.find((t) => !/asset|router/i.test(t.title ?? "")) ?? targets[0];
  if (!target) throw new Error("no inspector target");
  // wrangler's inspector proxy wants a local Origin; Node's (undici's) WebSocket takes headers as its second argument.
  const ws = new WebSocket(target.webSocketDebuggerUrl, { headers: { origin: "http://localhost" } } as unknown as string[]);
  await new Promise((ok, fail) => {
    ws.onopen = ok;
    ws.onerror = fail;
  });
  let next = 1;
  const pending = new Map<number, (v: unknown) => void>();
  ws.onmessage = (m) => {
    const msg = JSON.parse(String(m.data)) as { id?: number; result?: unknown; error?: unknown };
    if (msg.id !== undefined) pending.get(msg.id)?.(msg.error ? Promise.reject(new Error(JSON.stringify(msg.error))) : msg.result);
  };
  return {
    title: target.title,
    send: <T>(method: string, params: Record<string, unknown> = {}) =>
      new Promise<T>((ok) => {
        const id = next++;
        pending.set(id, ok as (v: unknown) => void);
        ws.send(JSON.stringify({ id, method, params }));
      }),
    close: () => ws.close(),
  };
}

/** Runs `work` under the profiler of the isolate behind `port`'s inspector; `interval` in µs. */
export async function profiled(port: number, work: () => Promise<void>, interval = 100): Promise<Profile> {
  const dt = await devtools(port);
  try {
    await dt.send("Profiler.enable");
    await dt.send("Profiler.setSamplingInterval", { interval });
    await dt.send("Profiler.start");
    await work();
    return (await dt.send<{ profile: Profile }>("Profiler.stop")).profile;
  } finally {
    dt.close();
  }
}

const where = (f: CallFrame) => `${f.functionName || "(anonymous)"} ${f.url.replace(/^.*\/(src|node_modules)\//, "$1/")}:${f.lineNumber + 1}`;

/** Self and total milliseconds per function (a function counted once per sample however deep it recurses). */
export function summarise(p: Profile, top: number) {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  let all = 0;
  let idle = 0;
  p.samples.forEach((id, i) => {
    const ms = (p.timeDeltas[i + 1] ?? 0) / 1000;
    const node = byId.get(id)!;
    all += ms;
    if (node.callFrame.functionName === "(idle)") idle += ms;
    self.set(where(node.callFrame), (self.get(where(node.callFrame)) ?? 0) + ms);
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const key = where(byId.get(at)!.callFrame);
      if (seen.has(key)) continue;
      seen.add(key);
      total.set(key, (total.get(key) ?? 0) + ms);
    }
  });
  const first = (m: Map<string, number>) =>
    [...m]
      .filter(([k]) => !k.startsWith("(idle)") && !k.startsWith("(root)"))
      .sort((a, b) => b[1] - a[1])
      .slice(0, top);
  return { all, idle, busy: all - idle, self: first(self), total: first(total) };
}

/** One line per function: ms per turn and share of the isolate's busy time. */
export function formatTop(rows: [string, number][], turns: number, busy: number): string {
  return rows.map(([k, ms]) => `${(ms / turns).toFixed(3).padStart(8)} ms/turn ${((100 * ms) / busy).toFixed(1).padStart(5)}%  ${k}`).join("\n");
}
