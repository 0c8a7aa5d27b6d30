// The baselines for bench/turn-latency.ts, served by one bare worker:
//   POST /         forwards the request body to the upstream (the pass-through);
//   POST /object   the least a stateful turn of issue 13's design can do: the Worker makes one RPC to a
//                  SQLite Durable Object, which forwards the body to the upstream and stores the request and
//                  the answer in one write; no auth, no rate limit, no facts, no window, no validation.
//   POST /object-limited   the same after one call to a rate-limit binding (as every edgeweave request makes).
// What edgeweave adds over /object is its own cost; what /object adds over / is the design's floor here.
import { DurableObject } from "cloudflare:workers";

type Env = { UPSTREAM: string; FLOOR: DurableObjectNamespace<FloorThread>; LIMIT: RateLimit };

const forward = async (upstream: string, body: string): Promise<Response> =>
  fetch(upstream, { method: "POST", headers: { "content-type": "application/json" }, body });

export class FloorThread extends DurableObject<Env> {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS turns (seq INTEGER PRIMARY KEY, request TEXT NOT NULL, answer TEXT NOT NULL)");
  }

  async turn(body: string): Promise<string> {
    const answer = await (await forward(this.env.UPSTREAM, body)).text();
    this.ctx.storage.sql.exec("INSERT INTO turns (request, answer) VALUES (?, ?)", body, answer);
    return answer;
  }
}

export default {
  async fetch(req: Request, env: Env): Promise<Response> {
    if (req.method !== "POST") return new Response("ok");
    const url = new URL(req.url);
    const path = url.pathname;
    const body = await req.text();
    if (path === "/") {
      const upstream = await forward(env.UPSTREAM, body);
      return new Response(upstream.body, { status: upstream.status, headers: { "content-type": "application/json" } });
    }
    if (path === "/object-limited" && !(await env.LIMIT.limit({ key: "bench" })).success) return new Response("limited", { status: 429 });
    const thread = url.searchParams.get("thread") ?? "floor";
    const answer = await env.FLOOR.get(env.FLOOR.idFromName(thread)).turn(body);
    return new Response(answer, { headers: { "content-type": "application/json" } });
  },
};
