/**
 * The Worker as deployed under the latency model (bench/latency/model.ts): the same app and
 * thread object, but every binding they reach goes through the modelled distances.
 * `POST /__passthrough` is the baseline: a bare forward to the same (delayed) upstream.
 */
import { app } from "../../src/http/app";
import { ThreadDO as RealThreadDO } from "../../src/object/thread-object";
import { wrapEnv } from "./model";

export class ThreadDO extends RealThreadDO {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, wrapEnv(env, "object"));
  }
}

export default {
  async fetch(req: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
    if (new URL(req.url).pathname === "/__passthrough") {
      const up = await fetch("http://localhost:11434/api/chat", { method: "POST", headers: { "content-type": "application/json" }, body: await req.text() });
      return new Response(up.body, { status: up.status, headers: { "content-type": up.headers.get("content-type") ?? "application/json" } });
    }
    return app.fetch(req, wrapEnv(env, "worker"), ctx);
  },
} satisfies ExportedHandler<Env>;
