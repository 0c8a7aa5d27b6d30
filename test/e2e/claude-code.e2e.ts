/**
 * Claude Code itself through edgeweave (issue 22), run in Node by `npm run test:e2e`.
 *
 * Installs the pinned @anthropic-ai/claude-code on demand into a cache folder (never a dependency of
 * the project: it is ~380 MB), checks the native binary answers `--version` (an install without its
 * postinstall leaves a stub that exits 0), then runs `wrangler dev` with one Anthropic model whose
 * base_url is a fake Anthropic server on loopback, and a recording proxy in front of the worker.
 * `claude -p … --max-turns 2` (telemetry and nonessential traffic off, ANTHROPIC_BASE_URL at the
 * proxy, a member key with `session:cc-*`, session-thread mode on): its answer is the fake's, the
 * anthropic-* headers it sent reached the fake unchanged, a second call with `--continue` keeps the
 * same x-claude-code-session-id, and each turn is stored once in the session's thread.
 * models.generated.ts is rebuilt from models.yaml at the end, also on failure.
 *
 * First, the README's own commands offline (issue 36): the shipped models.yaml, EDGEWEAVE_OFFLINE=1 and no
 * provider secret, as `npm start` runs it, and `ANTHROPIC_BASE_URL=… ANTHROPIC_API_KEY=$KEY claude` with an
 * admin key and nothing else (no --model, no custom headers): Claude Code asks for its own model name, and the
 * offline model answers it (it was 424 "needs the secret ANTHROPIC_API_KEY"), calling none of its tools.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, request as httpRequest, type IncomingHttpHeaders } from "node:http";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, run, startWranglerDev, type DevServer } from "../../bench/support/wrangler-dev";
import { startFakeAnthropic } from "./fake-anthropic-server";

/** The Claude Code release this test drives (bump deliberately: its wire behaviour is what is tested). */
const CLAUDE_CODE_VERSION = "2.1.332";
const ROOT = new URL("../..", import.meta.url).pathname;
const ARTIFACTS = join(ROOT, "test-artifacts");
const CONFIG = "wrangler.e2e-claude.toml";
const MODELS = join(ARTIFACTS, "claude-code.models.yaml");
const OPERATOR_KEY = "e2e-claude-operator";
const ANSWER = "PONG-FROM-FAKE-UPSTREAM";

function check(cond: unknown, message: string): asserts cond {
  if (!cond) throw new Error(`check failed: ${message}`);
}

/** The pinned CLI, installed once per version into the cache (CLAUDE_CODE_CACHE, else ~/.cache/edgeweave/claude-code). */
function ensureClaudeCode(): string {
  const dir = join(process.env.CLAUDE_CODE_CACHE ?? join(homedir(), ".cache", "edgeweave", "claude-code"), CLAUDE_CODE_VERSION);
  const bin = join(dir, "node_modules", ".bin", "claude");
  const version = () => spawnSync(bin, ["--version"], { encoding: "utf8", timeout: 30_000 }).stdout?.trim() ?? "";
  if (existsSync(bin) && version().startsWith(CLAUDE_CODE_VERSION)) return bin;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  // npm 11 runs a dependency's install scripts only when allowed; the CLI's postinstall places its native binary.
  writeFileSync(join(dir, "package.json"), JSON.stringify({ private: true, allowScripts: { "@anthropic-ai/claude-code": true } }));
  const install = spawnSync("npm", ["install", "--no-audit", "--no-fund", "--include=optional", `@anthropic-ai/claude-code@${CLAUDE_CODE_VERSION}`], {
    cwd: dir,
    encoding: "utf8",
    timeout: 600_000,
  });
  check(install.status === 0, `installing Claude Code failed:\n${install.stdout}\n${install.stderr}`);
  const got = version();
  check(
    got.startsWith(CLAUDE_CODE_VERSION),
    `claude --version says "${got}" after installing ${CLAUDE_CODE_VERSION} (a stub: the postinstall did not place the native binary)`,
  );
  return bin;
}

type Recorded = { method: string; path: string; headers: IncomingHttpHeaders; body: string };

/** A pass-through proxy in front of the worker that records what Claude Code sent. */
async function startRecorder(target: string): Promise<{ url: string; seen: Recorded[]; close(): Promise<void> }> {
  const seen: Recorded[] = [];
  const to = new URL(target);
  const server = createServer((req, res) => {
    const entry: Recorded = { method: req.method ?? "", path: req.url ?? "", headers: req.headers, body: "" };
    seen.push(entry);
    req.on("data", (c: Buffer) => (entry.body += c.toString()));
    const up = httpRequest({ host: to.hostname, port: to.port, method: req.method, path: req.url, headers: { ...req.headers, host: to.host } }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    up.on("error", () => res.destroy());
    req.pipe(up);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const addr = server.address();
  return { url: `http://127.0.0.1:${typeof addr === "object" && addr ? addr.port : 0}`, seen, close: () => new Promise((r) => server.close(() => r())) };
}

async function api<T>(base: string, path: string, key: string, body?: unknown): Promise<T> {
  const res = await fetch(base + path, {
    method: body === undefined ? "GET" : "POST",
    headers: { "x-api-key": key, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${path} → ${res.status} ${text}`);
  return JSON.parse(text) as T;
}

function claude(bin: string, args: string[], env: Record<string, string>, cwd: string): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(bin, args, { cwd, env: env as NodeJS.ProcessEnv, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), 180_000);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, out, err });
    });
  });
}

/** Claude Code's environment: its home and project folders of this run, telemetry and nonessential traffic off, plus `vars`. */
const cliEnv = (home: string, vars: Record<string, string>): Record<string, string> => ({
  PATH: process.env.PATH ?? "",
  HOME: home,
  DISABLE_TELEMETRY: "1",
  DISABLE_ERROR_REPORTING: "1",
  DISABLE_AUTOUPDATER: "1",
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
  CLAUDE_CODE_ENABLE_TELEMETRY: "0",
  ...vars,
});

/** Ports of the caller's (E2E_PORT, then the next ones), else free ones. */
const basePort = process.env.E2E_PORT ? Number(process.env.E2E_PORT) : undefined;
const portAt = async (i: number): Promise<number> => (basePort !== undefined ? basePort + i : freePort());

/** The README's walk-through and Claude Code line, offline: the shipped config, no provider secret. */
async function readmeOffline(bin: string): Promise<void> {
  const persist = mkdtempSync(join(tmpdir(), "edgeweave-claude-offline-"));
  const home = mkdtempSync(join(tmpdir(), "edgeweave-claude-home-"));
  const project = mkdtempSync(join(tmpdir(), "edgeweave-claude-project-"));
  let worker: DevServer | undefined;
  let recorder: Awaited<ReturnType<typeof startRecorder>> | undefined;
  try {
    await run("npx", ["wrangler", "d1", "migrations", "apply", "DB", "--local", "--persist-to", persist]);
    worker = await startWranglerDev({
      persistTo: persist,
      port: await portAt(3),
      inspectorPort: await portAt(4),
      // As .dev.vars.example has them: the provider secrets empty.
      vars: { OPERATOR_KEY, EDGEWEAVE_OFFLINE: "1", OPENAI_API_KEY: "", ANTHROPIC_API_KEY: "", GROQ_API_KEY: "", NVIDIA_API_KEY: "" },
    });
    recorder = await startRecorder(worker.url);
    await api(worker.url, "/v1/admin/tenants", OPERATOR_KEY, { id: "acme", name: "Acme Inc." });
    const { key } = await api<{ key: string }>(worker.url, "/v1/admin/tenants/acme/keys", OPERATOR_KEY, { role: "admin", name: "my laptop" });
    const out = await claude(
      bin,
      ["-p", "Hi, I am Ada.", "--max-turns", "2"],
      cliEnv(home, { ANTHROPIC_BASE_URL: recorder.url, ANTHROPIC_API_KEY: key }),
      project,
    );
    check(out.code === 0, `README's claude command offline exited ${out.code}:\n${out.out}\n${out.err}`);
    check(out.out.includes("Echo:") && !out.out.includes("BEM-070"), `the offline model answered:\n${out.out}\n${out.err}`);
    const calls = recorder.seen.filter((r) => r.method === "POST" && r.path.startsWith("/v1/messages") && !r.path.startsWith("/v1/messages/count_tokens"));
    check(calls.length > 0, "Claude Code called /v1/messages");
    const models = calls.map((r) => (JSON.parse(r.body) as { model?: string }).model ?? "");
    check(
      models.every((m) => m.startsWith("claude")),
      `Claude Code asked for its own model names, not auto: ${models.join(", ")}`,
    );
    // A tool the offline model called would come back as a tool_result in the next request.
    check(!calls.some((r) => r.body.includes('"tool_result"')), "the offline model called none of Claude Code's tools");
  } finally {
    await recorder?.close();
    await worker?.stop();
    for (const d of [persist, home, project]) rmSync(d, { recursive: true, force: true });
  }
}

const header = (h: IncomingHttpHeaders, name: string): string | undefined => {
  const v = h[name];
  return Array.isArray(v) ? v.join(", ") : v;
};

async function main(): Promise<void> {
  const started = Date.now();
  const bin = ensureClaudeCode();
  await readmeOffline(bin);
  mkdirSync(ARTIFACTS, { recursive: true });
  const upstream = await startFakeAnthropic(() => ANSWER);
  // One Anthropic model on the fake; its aliases take every name Claude Code asks for.
  writeFileSync(
    MODELS,
    [
      "default_model: claude-e2e",
      "models:",
      "  - name: claude-e2e",
      "    provider: anthropic",
      "    capabilities: [tools]",
      "    max_tokens: 200000",
      "    max_output_tokens: 32000",
      "    aliases: [claude-*, anthropic-*]",
      "    provider_config:",
      `      base_url: ${upstream.url}/v1`,
      "      api_key_env: ANTHROPIC_API_KEY",
      "      model: claude-sonnet-4-20250514",
      "",
    ].join("\n"),
  );
  const config = readFileSync(join(ROOT, "wrangler.toml"), "utf8").replace(
    /\[build\]\ncommand = "npm run build:worker"/,
    `[build]\ncommand = "tsx scripts/compile-models.ts ${MODELS} && npm run build:assets"`,
  );
  check(config.includes("compile-models.ts"), "wrangler.toml's [build] command is not the one this test replaces");
  writeFileSync(join(ROOT, CONFIG), config);
  const persist = mkdtempSync(join(tmpdir(), "edgeweave-claude-e2e-"));
  const home = mkdtempSync(join(tmpdir(), "edgeweave-claude-home-"));
  const project = mkdtempSync(join(tmpdir(), "edgeweave-claude-project-"));
  let worker: DevServer | undefined;
  let recorder: Awaited<ReturnType<typeof startRecorder>> | undefined;
  try {
    await run("npx", ["wrangler", "d1", "migrations", "apply", "DB", "--local", "--config", CONFIG, "--persist-to", persist]);
    worker = await startWranglerDev({
      config: CONFIG,
      persistTo: persist,
      port: await portAt(0),
      inspectorPort: await portAt(1),
      vars: { OPERATOR_KEY, ANTHROPIC_API_KEY: "sk-ant-e2e-fake", EDGEWEAVE_OFFLINE: "1" },
    });
    recorder = await startRecorder(worker.url);

    const tenant = `cc-${Date.now().toString(36)}`;
    await api(worker.url, "/v1/admin/tenants", OPERATOR_KEY, { id: tenant });
    // A member key: the session threads need its `session:cc-*` grant.
    const { key } = await api<{ key: string }>(worker.url, `/v1/admin/tenants/${tenant}/keys`, OPERATOR_KEY, { role: "member", scopes: ["session:cc-*"] });

    const env = cliEnv(home, { ANTHROPIC_BASE_URL: recorder.url, ANTHROPIC_API_KEY: key, ANTHROPIC_CUSTOM_HEADERS: "x-edgeweave-claude-session: thread" });
    const first = await claude(bin, ["-p", "First question: reply with one word.", "--max-turns", "2"], env, project);
    if (process.env.E2E_DUMP) writeFileSync(join(ARTIFACTS, "claude-code-requests.json"), JSON.stringify(recorder.seen, null, 2));
    check(first.code === 0, `claude -p exited ${first.code}:\n${first.out}\n${first.err}`);
    check(first.out.includes(ANSWER), `claude's answer is the fake upstream's:\n${first.out}\n${first.err}`);

    const messagesCalls = (from: number) => recorder!.seen.slice(from).filter((r) => r.method === "POST" && r.path.startsWith("/v1/messages"));
    const firstCalls = messagesCalls(0);
    check(firstCalls.length > 0, "Claude Code called /v1/messages");
    const sent = firstCalls.find((r) => header(r.headers, "anthropic-beta") !== undefined) ?? firstCalls[0]!;
    const reached = upstream.seen.filter((s) => s.path.startsWith("/v1/messages"));
    check(reached.length > 0, "the fake upstream was called");
    check(header(sent.headers, "anthropic-version") !== undefined, "Claude Code sent anthropic-version");
    check(
      reached.some((s) => header(s.headers, "anthropic-version") === header(sent.headers, "anthropic-version")),
      `anthropic-version reached the upstream unchanged (${header(sent.headers, "anthropic-version")})`,
    );
    const beta = header(sent.headers, "anthropic-beta");
    if (beta !== undefined)
      check(
        reached.some((s) => header(s.headers, "anthropic-beta") === beta),
        `anthropic-beta reached the upstream unchanged (${beta})`,
      );
    const session = header(firstCalls[0]!.headers, "x-claude-code-session-id");
    check(session !== undefined, "Claude Code sent x-claude-code-session-id");

    const before = recorder.seen.length;
    const second = await claude(bin, ["-p", "Second question: one word again.", "--continue", "--max-turns", "2"], env, project);
    check(second.code === 0, `claude -p --continue exited ${second.code}:\n${second.out}\n${second.err}`);
    check(second.out.includes(ANSWER), `the second answer is the fake's too:\n${second.out}`);
    const secondCalls = messagesCalls(before);
    check(secondCalls.length > 0, "the second call reached /v1/messages");
    check(
      secondCalls.every((r) => header(r.headers, "x-claude-code-session-id") === session),
      `--continue keeps the session id ${session}: ${secondCalls.map((r) => header(r.headers, "x-claude-code-session-id")).join(", ")}`,
    );

    // Session-thread mode: the conversation is in thread cc-<session>-<digest>, each turn stored once.
    const listed = await api<{ threads: { thread_id?: string; id?: string }[] }>(worker.url, "/v1/threads?limit=100", key);
    const ids = listed.threads.map((t) => t.thread_id ?? t.id ?? "").filter((id) => id.startsWith(`cc-${session}-`));
    check(ids.length > 0, `a thread of session ${session} exists: ${JSON.stringify(listed)}`);
    type Stored = { role: string; content: unknown };
    const texts = async (id: string) =>
      (await api<{ channels: { messages: Stored[] } }>(worker!.url, `/v1/threads/${id}/state`, key)).channels.messages.map((m) => ({
        role: m.role,
        text: typeof m.content === "string" ? m.content : JSON.stringify(m.content),
      }));
    let main: { role: string; text: string }[] | undefined;
    for (const id of ids) {
      const t = await texts(id);
      if (t.some((m) => m.text.includes("First question"))) main = t;
    }
    check(main, `the session's main thread holds the first prompt (${ids.join(", ")})`);
    const count = (s: string) => main!.filter((m) => m.role === "user" && m.text.includes(s)).length;
    check(count("First question") === 1, `the first turn is stored once: ${JSON.stringify(main)}`);
    check(count("Second question") === 1, `the second turn is stored once: ${JSON.stringify(main)}`);
    check(main.filter((m) => m.role === "assistant" && m.text.includes(ANSWER)).length === 2, `both answers stored once: ${JSON.stringify(main)}`);
    console.log(
      `claude-code e2e passed in ${((Date.now() - started) / 1000).toFixed(1)} s (Claude Code ${CLAUDE_CODE_VERSION}; ${reached.length} upstream calls)`,
    );
  } finally {
    await recorder?.close();
    await worker?.stop();
    await upstream.close();
    rmSync(join(ROOT, CONFIG), { force: true });
    for (const d of [persist, home, project]) rmSync(d, { recursive: true, force: true });
    // The test compiled its own models into src/routing/models.generated.ts: back to models.yaml's.
    spawnSync("npm", ["run", "--silent", "build:models"], { cwd: ROOT, stdio: "ignore" });
  }
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
