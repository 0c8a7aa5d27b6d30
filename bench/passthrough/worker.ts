// The baselines for bench/turn-latency.ts, served by one bare worker:
//   POST /         forwards the request body to the upstream (the pass-through);
//   POST /object   the least a stateful turn of issue 13's design can do: the Worker makes one RPC to a
//                  SQLite Durable Object, which forwards the body to the upstream and stores the request and
//                  the answer in one write; no auth, no rate limit, no facts, no window, no validation.
//   POST /object-limited   the same after one call to a rate-limit binding (as every edgeweave request makes).
//   POST /object-context   /object-limited with a thread: the object keeps its messages in memory (seeded by
//                  POST /object-seed) and sends them all, with the request's, to the upstream, as a stateful
//                  turn over a 1,000-message thread must; the turn's two messages are stored in one write.
// What edgeweave adds over these is its own cost; what they add over / is the design's floor here.
import { DurableObject } from "cloudflare:workers";

type Env = { UPSTREAM: string; FLOOR: DurableObjectNamespace<FloorThread>; LIMIT: RateLimit };
type Chat = { model: string; messages: unknown[]; stream?: boolean };

const forward = async (upstream: string, body: string): Promise<Response> =>
  fetch(upstream, { method: "POST", headers: { "content-type": "application/json" }, body });

export class FloorThread extends DurableObject<Env> {
  /** The thread's messages, oldest first (read once per object lifetime). */
  private messages: unknown[] | undefined;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS turns (seq INTEGER PRIMARY KEY, request TEXT NOT NULL, answer TEXT NOT NULL)");
    ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS messages (seq INTEGER PRIMARY KEY, json TEXT NOT NULL)");
  }

  async turn(body: string): Promise<string> {
    const answer = await (await forward(this.env.UPSTREAM, body)).text();
    this.ctx.storage.sql.exec("INSERT INTO turns (request, answer) VALUES (?, ?)", body, answer);
    return answer;
  }

  seed(messages: unknown[]): void {
    for (const m of messages) this.ctx.storage.sql.exec("INSERT INTO messages (json) VALUES (?)", JSON.stringify(m));
    this.messages = undefined;
  }

  async contextTurn(body: string): Promise<string> {
    const request = JSON.parse(body) as Chat;
    this.messages ??= this.ctx.storage.sql
      .exec<{ json: string }>("SELECT json FROM messages ORDER BY seq")
      .toArray()
      .map((r): unknown => JSON.parse(r.json));
    const answer = await (await forward(this.env.UPSTREAM, JSON.stringify({ ...request, messages: [...this.messages, ...request.messages] }))).text();
    const reply = (JSON.parse(answer) as { message?: unknown }).message;
    const added = [...request.messages, reply];
    for (const m of added) this.ctx.storage.sql.exec("INSERT INTO messages (json) VALUES (?)", JSON.stringify(m));
    this.messages.push(...added);
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
    if ((path === "/object-limited" || path === "/object-context") && !(await env.LIMIT.limit({ key: "bench" })).success)
      return new Response("limited", { status: 429 });
    const thread = env.FLOOR.get(env.FLOOR.idFromName(url.searchParams.get("thread") ?? "floor"));
    if (path === "/object-seed") {
      await thread.seed(JSON.parse(body) as unknown[]);
      return new Response("{}", { headers: { "content-type": "application/json" } });
    }
    const answer = path === "/object-context" ? await thread.contextTurn(body) : await thread.turn(body);
    return new Response(answer, { headers: { "content-type": "application/json" } });
  },
};
