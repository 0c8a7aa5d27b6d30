// The baseline for bench/turn-latency.ts: a bare worker that forwards the request body to the same upstream.
export default {
  async fetch(req: Request, env: { UPSTREAM: string }): Promise<Response> {
    if (req.method !== "POST") return new Response("ok");
    const upstream = await fetch(env.UPSTREAM, { method: "POST", headers: { "content-type": "application/json" }, body: await req.text() });
    return new Response(upstream.body, { status: upstream.status, headers: { "content-type": "application/json" } });
  },
};
