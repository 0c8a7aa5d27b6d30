// The baselines for bench/turn-latency.ts, served by one bare worker:
//   POST /         forwards the request body to the upstream (the pass-through);
//   POST /object   the least a stateful turn of issue 13's design can do: the Worker makes one RPC to a
//                  SQLite Durable Object, which forwards the body to the upstream and stores the request and
//                  the answer in one write; no auth, no rate limit, no facts, no window, no validation.
//   POST /object-limited   the same after one call to a rate-limit binding (as every edgeweave request makes).
//   POST /object-context   /object-limited with a thread: the object keeps its messages in memory (seeded by
//                  POST /object-seed) and sends them all, with the request's, to the upstream, as a stateful
//                  turn over a 1,000-message thread must; the turn's two messages are stored in one write.
//   POST /object-stored   /object-context storing what an edgeweave turn stores (bench/concurrent-turns.ts, issue 36):
//                  per turn it reads rows of an indexed log through an FTS5 index (a recall) and the newest rows (a
//                  window), writes the two messages into the log and its FTS5 index, a checkpoint with three write
//                  rows, the head row and a usage row, in one transaction, and sends one D1 statement (a usage
//                  upsert) as the answer leaves. GET /object-stored-counts?thread= answers the rows it read and wrote.
// What edgeweave adds over these is its own cost; what they add over / is the design's floor here.
import { DurableObject } from "cloudflare:workers";

type Env = { UPSTREAM: string; FLOOR: DurableObjectNamespace<FloorThread>; LIMIT: RateLimit; DB: D1Database };
type Chat = { model: string; messages: unknown[]; stream?: boolean };
type Message = { role: string; content: string };

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

  /** The stored turn's rows read and written so far (SQLite cursors' own counts), and its turns. */
  private counts = { turns: 0, read: 0, written: 0 };

  private run<T extends Record<string, SqlStorageValue>>(query: string, ...args: SqlStorageValue[]): T[] {
    const cursor = this.ctx.storage.sql.exec<T>(query, ...args);
    const rows = cursor.toArray();
    this.counts.read += cursor.rowsRead;
    this.counts.written += cursor.rowsWritten;
    return rows;
  }

  /** The tables a stored turn reads and writes: indexed as edgeweave's thread object's are, with an FTS5 index of the log. */
  private storedTables(): void {
    const sql = this.ctx.storage.sql;
    if (sql.exec("SELECT 1 FROM sqlite_master WHERE name = 'log'").toArray().length > 0) return;
    sql.exec("CREATE TABLE log (seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, role TEXT NOT NULL, json TEXT NOT NULL, created_at INTEGER NOT NULL)");
    sql.exec("CREATE VIRTUAL TABLE log_fts USING fts5(text, content = '', contentless_delete = 1, tokenize = 'porter unicode61 remove_diacritics 2')");
    sql.exec("INSERT INTO log_fts (log_fts, rank) VALUES ('automerge', 0)");
    sql.exec("CREATE TABLE checkpoints (id INTEGER PRIMARY KEY, parent INTEGER, created_at INTEGER NOT NULL, head_seq INTEGER NOT NULL)");
    sql.exec(
      "CREATE TABLE writes (checkpoint INTEGER NOT NULL, idx INTEGER NOT NULL, channel TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (checkpoint, idx))",
    );
    sql.exec("CREATE TABLE head (k INTEGER PRIMARY KEY, checkpoint INTEGER NOT NULL, total INTEGER NOT NULL)");
    sql.exec("CREATE TABLE pending (k TEXT PRIMARY KEY, json TEXT NOT NULL)");
    sql.exec("CREATE TABLE vectors (seq INTEGER PRIMARY KEY, vec BLOB)");
    sql.exec("CREATE INDEX vectors_missing ON vectors (seq) WHERE vec IS NULL");
    sql.exec("CREATE TABLE usage (day TEXT NOT NULL, model TEXT NOT NULL, requests INTEGER NOT NULL, tokens INTEGER NOT NULL, PRIMARY KEY (day, model))");
  }

  /** The log's rows and their index, for /object-stored (the same 1,000 messages the in-memory thread holds). */
  seedStored(messages: Message[]): void {
    this.storedTables();
    this.ctx.storage.transactionSync(() => {
      for (const m of messages) this.storeMessage(m, Date.now());
    });
    this.seed(messages);
    this.counts = { turns: 0, read: 0, written: 0 }; // the turns' rows, not the seed's
  }

  private storeMessage(m: Message, now: number): void {
    const [row] = this.run<{ seq: number }>(
      "INSERT INTO log (id, role, json, created_at) VALUES (?, ?, ?, ?) RETURNING seq",
      crypto.randomUUID(),
      m.role,
      JSON.stringify(m),
      now,
    );
    this.run("INSERT INTO log_fts (rowid, text) VALUES (?, ?)", row!.seq, m.content);
    this.run("INSERT INTO vectors (seq, vec) VALUES (?, NULL)", row!.seq);
  }

  async storedTurn(body: string): Promise<{ answer: string; usage: [string, string, number] }> {
    const request = JSON.parse(body) as { model: string; messages: Message[]; stream?: boolean };
    const question = request.messages.at(-1)?.content ?? "";
    // A recall: the index's best matches older than the window, read back from the log; then the window's newest rows.
    const words = question.match(/[\p{L}\p{N}]+/gu) ?? [];
    const window = this.run<{ seq: number; json: string }>("SELECT seq, json FROM log ORDER BY seq DESC LIMIT 8");
    const hits = words.length
      ? this.run<{ seq: number }>(
          "SELECT rowid AS seq FROM log_fts WHERE log_fts MATCH ? AND rowid < ? ORDER BY rowid DESC LIMIT 2",
          words.map((w) => `"${w}"`).join(" OR "),
          window.at(-1)?.seq ?? 0,
        )
      : [];
    this.run("SELECT seq, json FROM log WHERE seq IN (SELECT value FROM json_each(?))", JSON.stringify(hits.map((h) => h.seq)));
    this.messages ??= this.ctx.storage.sql
      .exec<{ json: string }>("SELECT json FROM messages ORDER BY seq")
      .toArray()
      .map((r): unknown => JSON.parse(r.json));
    const answer = await (await forward(this.env.UPSTREAM, JSON.stringify({ ...request, messages: [...this.messages, ...request.messages] }))).text();
    const reply = (JSON.parse(answer) as { message?: Message }).message ?? { role: "assistant", content: "" };
    const added = [...request.messages, reply];
    const now = Date.now();
    const day = new Date(now).toISOString().slice(0, 10);
    this.ctx.storage.transactionSync(() => {
      for (const m of added) this.storeMessage(m, now);
      const [cp] = this.run<{ id: number }>(
        "INSERT INTO checkpoints (parent, created_at, head_seq) VALUES ((SELECT checkpoint FROM head WHERE k = 0), ?, (SELECT MAX(seq) FROM log)) RETURNING id",
        now,
      );
      this.run(
        "INSERT INTO writes (checkpoint, idx, channel, value) SELECT ?, key, value ->> 0, value ->> 1 FROM json_each(?)",
        cp!.id,
        JSON.stringify([
          ["messages", JSON.stringify(added)],
          ["last_route", JSON.stringify({ model: request.model })],
          ["usage", "{}"],
        ]),
      );
      this.run(
        "INSERT INTO head (k, checkpoint, total) VALUES (0, ?, 1) ON CONFLICT (k) DO UPDATE SET checkpoint = excluded.checkpoint, total = total + 1",
        cp!.id,
      );
      this.run("INSERT INTO pending (k, json) VALUES ('thread', ?) ON CONFLICT (k) DO UPDATE SET json = excluded.json", JSON.stringify({ updated_at: now }));
      this.run(
        "INSERT INTO usage (day, model, requests, tokens) VALUES (?, ?, 1, ?) ON CONFLICT (day, model) DO UPDATE SET requests = requests + 1, tokens = tokens + excluded.tokens",
        day,
        request.model,
        answer.length,
      );
    });
    this.messages.push(...added);
    this.counts.turns++;
    return { answer, usage: [day, request.model, answer.length] };
  }

  storedCounts(): { turns: number; read: number; written: number } {
    return this.counts;
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

/** The D1 side of a stored turn: one usage upsert on an indexed table, as edgeweave's usage rows are kept. */
const D1_USAGE =
  "CREATE TABLE IF NOT EXISTS usage (tenant_id TEXT NOT NULL, day TEXT NOT NULL, model TEXT NOT NULL, requests INTEGER NOT NULL, tokens INTEGER NOT NULL, PRIMARY KEY (tenant_id, day, model))";

export default {
  async fetch(req: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
    const url = new URL(req.url);
    const path = url.pathname;
    if (path === "/object-stored-counts") {
      const counts = await env.FLOOR.get(env.FLOOR.idFromName(url.searchParams.get("thread") ?? "floor")).storedCounts();
      return Response.json(counts);
    }
    if (req.method !== "POST") return new Response("ok");
    const body = await req.text();
    if (path === "/") {
      const upstream = await forward(env.UPSTREAM, body);
      return new Response(upstream.body, { status: upstream.status, headers: { "content-type": "application/json" } });
    }
    if ((path === "/object-limited" || path === "/object-context" || path === "/object-stored") && !(await env.LIMIT.limit({ key: "bench" })).success)
      return new Response("limited", { status: 429 });
    const thread = env.FLOOR.get(env.FLOOR.idFromName(url.searchParams.get("thread") ?? "floor"));
    if (path === "/object-seed") {
      await thread.seed(JSON.parse(body) as unknown[]);
      return new Response("{}", { headers: { "content-type": "application/json" } });
    }
    if (path === "/object-stored-seed") {
      await env.DB.exec(D1_USAGE);
      await thread.seedStored(JSON.parse(body) as Message[]);
      return new Response("{}", { headers: { "content-type": "application/json" } });
    }
    if (path === "/object-stored") {
      const { answer, usage } = await thread.storedTurn(body);
      ctx.waitUntil(
        env.DB.prepare(
          "INSERT INTO usage (tenant_id, day, model, requests, tokens) VALUES ('bench', ?, ?, 1, ?) ON CONFLICT (tenant_id, day, model) DO UPDATE SET requests = requests + 1, tokens = tokens + excluded.tokens",
        )
          .bind(...usage)
          .run(),
      );
      return new Response(answer, { headers: { "content-type": "application/json" } });
    }
    const answer = path === "/object-context" ? await thread.contextTurn(body) : await thread.turn(body);
    return new Response(answer, { headers: { "content-type": "application/json" } });
  },
};
