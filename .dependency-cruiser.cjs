/**
 * One dependency direction for src/ (checked by `npm run check:deps`, part of `npm test`;
 * type-only imports count: scripts/check-deps.ts keeps them as edges).
 *
 *   core  ←  config  ←  embed (recall by meaning)  ←  thread ← memory ← auth      (the stores and who may reach them)
 *                    ←  routing, providers, webhooks, queue (the task queue's wire contract)
 *                    ←  budgets (spend caps: records, windows, the object holding spend; its threshold events signed as webhooks sign)
 *   all of the above ←  pipeline (one agent run)  ←  tasks  ←  idempotency  ←  edge (what every route shares)
 *                    ←  {responses, anthropic, langgraph, mcp} (wire formats and route sets)  ←  http (routes, the app)  ←  index.ts
 *   pipeline, responses ←  object (the thread's Durable Object: its capabilities and the run inside it)  ←  index.ts
 *
 * `core` (messages, tokens, ids, principal, errors, log, traces and their export, backoff, zod issues, path segments)
 * imports nothing of ours; `langgraph-client` is a published package and imports nothing of
 * ours either. Each folder below lists everything it may import besides itself.
 */
const may = {
  core: [],
  // Recall by meaning: the embedded table, stored vectors, the fusion of channels (read by the stores below it).
  embed: ["core", "config"],
  "langgraph-client": [],
  config: ["core"],
  // The queue's wire contract: what a run enqueues and the consumer reads.
  queue: ["core", "config"],
  thread: ["core", "embed", "config"],
  memory: ["core", "embed", "config", "thread"],
  auth: ["core", "embed", "config", "memory"],
  routing: ["core", "config"],
  providers: ["core", "config"],
  webhooks: ["core", "config", "auth"],
  // Spend budgets: their records, windows and the object that holds each budget's spend (the run's guard is in pipeline);
  // threshold events use webhooks' signing, sending and URL rules; the metadata keys budgets may be on are models.yaml's, compiled in routing.
  budgets: ["core", "config", "thread", "auth", "webhooks", "routing"],
  pipeline: ["core", "embed", "config", "thread", "memory", "auth", "routing", "providers", "queue", "budgets"],
  tasks: ["core", "embed", "config", "thread", "memory", "auth", "routing", "providers", "webhooks", "queue", "pipeline"],
  // Kept Idempotency-Key results (D1), under the middleware in edge.
  idempotency: ["core", "embed", "config", "thread", "memory", "auth", "routing", "providers", "webhooks", "queue", "budgets", "pipeline", "tasks"],
  // What every route shares: the app's Hono env, the declared access (auth, rate limit, body limits, Idempotency-Key),
  // validation and the error shapes, and the chat and Responses request schemas the wire formats build on.
  edge: ["core", "embed", "config", "thread", "memory", "auth", "routing", "providers", "webhooks", "queue", "budgets", "pipeline", "tasks", "idempotency"],
  // Route sets and wire formats on edge's helpers; http mounts them (app.ts, mcp.ts) and routes to them.
  mcp: ["core", "embed", "config", "thread", "memory", "auth", "routing", "providers", "webhooks", "queue", "budgets", "pipeline", "tasks", "edge"],
  responses: ["core", "embed", "config", "thread", "memory", "auth", "routing", "providers", "webhooks", "queue", "budgets", "pipeline", "tasks", "edge"],
  anthropic: ["core", "embed", "config", "thread", "memory", "auth", "routing", "providers", "webhooks", "queue", "budgets", "pipeline", "tasks", "edge"],
  // LangGraph's server API (threads, assistants, runs): its conversions and records; the routes are in http.
  "agent-protocol": [
    "core",
    "embed",
    "config",
    "thread",
    "memory",
    "auth",
    "routing",
    "providers",
    "webhooks",
    "queue",
    "budgets",
    "pipeline",
    "tasks",
    "edge",
  ],
  langgraph: [
    "core",
    "embed",
    "config",
    "thread",
    "memory",
    "auth",
    "routing",
    "providers",
    "webhooks",
    "queue",
    "budgets",
    "pipeline",
    "tasks",
    "edge",
    "langgraph-client",
    "agent-protocol",
  ],
  http: [
    "core",
    "embed",
    "config",
    "thread",
    "memory",
    "auth",
    "routing",
    "providers",
    "webhooks",
    "queue",
    "budgets",
    "pipeline",
    "tasks",
    "idempotency",
    "edge",
    "mcp",
    "langgraph",
    "agent-protocol",
    "responses",
    "anthropic",
  ],
  // The thread's Durable Object composes the thread capabilities with the run, and renders the stored Responses record in the run's save.
  object: ["core", "embed", "config", "thread", "memory", "auth", "routing", "providers", "webhooks", "queue", "budgets", "pipeline", "responses"],
  // The inspector is a browser bundle: it shares the wire types only.
  ui: ["core", "thread"],
};

// The folders' own graph has no cycle: a folder reached from one it may import would make the two one layer.
for (const start of Object.keys(may)) {
  const seen = new Set();
  const visit = (folder) => {
    for (const next of may[folder] ?? []) {
      if (next === start) throw new Error(`.dependency-cruiser.cjs: folder cycle through src/${start} and src/${folder}`);
      if (!seen.has(next)) seen.add(next), visit(next);
    }
  };
  visit(start);
}

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      comment: "A module cycle means two modules are one; split out what both need.",
      from: {},
      to: { circular: true },
    },
    ...Object.entries(may).map(([folder, allowed]) => ({
      name: `layer-${folder}`,
      severity: "error",
      comment: `src/${folder} may import only ${allowed.length ? allowed.join(", ") : "nothing else of ours"} (see the top of .dependency-cruiser.cjs)`,
      from: { path: `^src/${folder}/` },
      to: { path: "^src/", pathNot: [`^src/${folder}/`, ...allowed.map((a) => (a.endsWith("$") ? `^src/${a}` : `^src/${a}/`))] },
    })),
    {
      name: "layer-no-loose-modules",
      severity: "error",
      comment: "Every module but the Worker entry (src/index.ts) lives in a layer folder.",
      from: { path: "^src/[^/]+$", pathNot: "^src/index\\.[jt]s$" },
      to: {},
    },
    {
      name: "http-mounts-only",
      severity: "error",
      comment: "http reaches langgraph and mcp only where it mounts them.",
      from: { path: "^src/http/", pathNot: "^src/http/(app|mcp)\\.[jt]s$" },
      to: { path: "^src/(langgraph|mcp)/" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    // Type-only imports are dependencies too (scripts/check-deps.ts keeps them in the stripped copy).
    tsPreCompilationDeps: true,
    // Paths say .js: the check runs over a type-stripped copy (scripts/check-deps.ts); rules match both.
  },
};
