/**
 * Browser test of the thread inspector (/ui), run in Node: `npm run test:e2e`.
 *
 * Starts the server as `npm start` does (scripts/dev-setup.ts: migrations, build, a quiet
 * `wrangler dev`, whose short banner names the URL) on a free loopback port with the example
 * secrets and a fresh, throwaway local state, seeds a tenant, a key, a fact and a
 * two-turn thread through the API (offline model), then drives Debian's chromium with
 * playwright-core: the operator key gets advice, a failed key clears the list, the thread search
 * asks the server, enter the key, open the thread, read messages and history (ids whole, copyable), fork
 * from the first checkpoint and see the new branch, read the memory report of the last run (which
 * facts loaded and why), a LangGraph thread's checkpoints (stored by the real EdgeweaveSaver) and the
 * tenant's spend budget;
 * then follow the landing page's link to
 * /docs and see the API reference rendered from this origin, without Scalar's hosted features.
 * Saves test-artifacts/inspector.png and docs.png.
 * wrangler dev is stopped at the end, also on failure.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import { chromium, type Page } from "playwright-core";
import { EdgeweaveSaver } from "../../src/langgraph-client/saver";

const ROOT = new URL("../..", import.meta.url).pathname;
const ARTIFACTS = join(ROOT, "test-artifacts");
const STATE = join(ARTIFACTS, "e2e-state");
const ENV_FILE = join(ARTIFACTS, "e2e.dev.vars");
const SCREENSHOT = join(ARTIFACTS, "inspector.png");
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const OPERATOR_KEY = "dev-operator-key"; // from .dev.vars.example
const TSX = join(ROOT, "node_modules", ".bin", "tsx");

function check(cond: unknown, message: string): asserts cond {
  if (!cond) throw new Error(`check failed: ${message}`);
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === "object" && addr ? resolve(addr.port) : reject(new Error("no port"))));
    });
  });
}

/** Threads seeded beyond the two named ones: more than one page of the thread list. */
const BULK_THREADS = 51;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `npm start`'s script (scripts/dev-setup.ts: migrations, build, quiet `wrangler dev`) with a throwaway state. */
function startWrangler(port: number, inspectorPort: number): { proc: ChildProcess; log: () => string } {
  let out = "";
  // Own process group, so stopping it also stops wrangler and workerd.
  const proc = spawn(
    TSX,
    [
      join(ROOT, "scripts", "dev-setup.ts"),
      "--ip",
      "127.0.0.1",
      "--port",
      String(port),
      "--inspector-port",
      String(inspectorPort),
      "--env-file",
      ENV_FILE,
      "--persist-to",
      STATE,
      "--show-interactive-dev-session=false",
    ],
    { cwd: ROOT, detached: true, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, WRANGLER_SEND_METRICS: "false" } },
  );
  proc.stdout?.on("data", (d: Buffer) => (out += d.toString()));
  proc.stderr?.on("data", (d: Buffer) => (out += d.toString()));
  return { proc, log: () => out };
}

/** `npm start` is quiet: a few lines, the URL among them (issue 24.14: it printed ~850). */
async function checkQuietStart(base: string, log: () => string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!log().includes("Ctrl-C stops it") && Date.now() < deadline) await sleep(100);
  const lines = log().trimEnd().split("\n");
  check(log().includes(`edgeweave is running at ${base}`), `the start banner names the URL:\n${log()}`);
  check(lines.length <= 15, `npm start printed ${lines.length} lines:\n${log()}`);
}

function stopWrangler(proc: ChildProcess | undefined): void {
  if (!proc?.pid || proc.exitCode !== null) return;
  try {
    process.kill(-proc.pid, "SIGTERM");
  } catch {
    // already gone
  }
}

async function waitForHealth(base: string, proc: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) throw new Error(`wrangler dev exited (${proc.exitCode}):\n${log()}`);
    try {
      const res = await fetch(`${base}/health`);
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await sleep(300);
  }
  throw new Error(`wrangler dev did not answer /health within 60 s:\n${log()}`);
}

async function call<T>(base: string, method: string, path: string, key: string, body?: unknown): Promise<T> {
  const res = await fetch(base + path, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path} → ${res.status} ${text}`);
  return JSON.parse(text) as T;
}

type Seeded = {
  key: string;
  thread: string;
  first: string;
  second: string;
  fact: string;
  orgFact: string;
  graph: { thread: string; id: string; parent: string };
  budget: string;
};

async function seed(base: string): Promise<Seeded> {
  const tenant = `e2e-${Date.now().toString(36)}`;
  await call(base, "POST", "/v1/admin/tenants", OPERATOR_KEY, { id: tenant, name: "E2E" });
  const { key } = await call<{ key: string }>(base, "POST", `/v1/admin/tenants/${tenant}/keys`, OPERATOR_KEY, { role: "admin", name: "inspector e2e" });
  // More threads than the inspector's first page (50), so "More threads" shows; older than
  // the named threads below, which stay on the first page.
  // bulk-0 is written alone and first, a few ms before the rest: threads written in one parallel
  // batch take their list times in whatever order their objects ran, so only a thread written
  // before them all is sure to be the oldest.
  const bulk = (n: number) => call(base, "POST", `/v1/threads/bulk-${n}/state`, key, { ops: [{ op: "set", channel: "topic", value: "bulk" }] });
  await bulk(0);
  await sleep(20);
  for (let i = 1; i < BULK_THREADS; i += 10) await Promise.all(Array.from({ length: Math.min(10, BULK_THREADS - i) }, (_, j) => bulk(i + j)));
  const thread = "support-e2e";
  const fact = "The customer prefers short answers.";
  await call(base, "POST", "/v1/memory/facts", key, { scope: `session:${thread}`, kind: "style", text: fact });
  // The assistant agent loads organization:acme: the last run's memory report lists this fact.
  const orgFact = (
    await call<{ id: string }>(base, "POST", "/v1/memory/facts", key, { scope: "organization:acme", kind: "shipping", text: "Orders ship from Lisbon." })
  ).id;
  const turn = (text: string) =>
    call<{ checkpoint_id: string }>(base, "POST", "/v1/invoke", key, { agent_name: "assistant", session_id: thread, content: [{ type: "text", text }] });
  const first = (await turn("Hello, my order <b>#42</b> is late")).checkpoint_id;
  const second = (await turn("Can you check it again?")).checkpoint_id;
  // A LangGraph thread: two checkpoints and a pending write, through the real saver over HTTP.
  const saver = new EdgeweaveSaver({ baseUrl: base, apiKey: key });
  const graphThread = "graph-e2e";
  const cp1 = { ...emptyCheckpoint(), id: uuid6(-1), channel_values: { topic: "order" }, channel_versions: { topic: 1 } };
  const c1 = await saver.put({ configurable: { thread_id: graphThread, checkpoint_ns: "" } }, cp1, { source: "input", step: -1, parents: {} }, { topic: 1 });
  const cp2 = { ...emptyCheckpoint(), id: uuid6(-1), channel_values: { topic: "late order" }, channel_versions: { topic: 2 } };
  const c2 = await saver.put(c1, cp2, { source: "loop", step: 0, parents: {} }, { topic: 2 });
  await saver.putWrites(c2, [["topic", "<i>escalate</i>"]], "task-e2e");
  await saver.getTuple(c2); // a read stores the queued writes first
  const budget = (
    await call<{ id: string }>(base, "POST", `/v1/admin/tenants/${tenant}/budgets`, key, { kind: "tenant", limit_usd: 5, window: "day", name: "e2e" })
  ).id;
  return { key, thread, first, second, fact, orgFact, graph: { thread: graphThread, id: cp2.id, parent: cp1.id }, budget };
}

async function drive(page: Page, base: string, s: Seeded): Promise<void> {
  await page.goto(`${base}/ui`);
  // The operator key (a newcomer's first key) is refused with what to do instead, and not kept.
  await page.fill("#key", OPERATOR_KEY);
  await page.click("#key-form button[type=submit]");
  const advice = await page.locator("#status.error").filter({ hasText: "operator key" }).innerText();
  check(/tenant admin key/.test(advice) && advice.includes("/v1/admin/tenants/<tenant>/keys"), `the operator key gets advice: ${advice}`);
  check((await page.evaluate(() => sessionStorage.length)) === 0, "the operator key is not kept");
  check((await page.locator("#key-state").innerText()) === "No key set.", "no key set after the operator key");

  // A wrong key is reported and not kept.
  await page.fill("#key", "ew_not-a-real-key");
  await page.click("#key-form button[type=submit]");
  await page.locator("#status.error").filter({ hasText: "BEM-021" }).waitFor();
  check((await page.locator("#key-state").innerText()) === "No key set.", "a rejected key is not reported as set");
  check((await page.evaluate(() => sessionStorage.length)) === 0, "a rejected key is dropped from sessionStorage");
  check(await page.locator("#forget").isHidden(), "nothing to forget after a rejected key");

  await page.fill("#key", s.key);
  await page.click("#key-form button[type=submit]");
  const link = page.locator(`.thread-link[data-thread="${s.thread}"]`);
  await link.waitFor();
  // The LangGraph tab is at the top of the page, reachable without scrolling.
  const tabBox = await page.locator("#tab-langgraph").boundingBox();
  check(tabBox !== null && tabBox.y + tabBox.height < 900, `the LangGraph tab is in the first screen: ${JSON.stringify(tabBox)}`);

  // More than a page of threads: "More threads" shows; a search asks the server and finds past the first page.
  await page.locator("#more-threads").waitFor({ state: "visible" });
  check((await page.locator(".thread-link").count()) === 50, "a first page of 50 threads");
  check((await page.locator('.thread-link[data-thread="bulk-0"]').count()) === 0, "the oldest thread is past the first page");
  await page.fill("#thread-query", "BULK-0");
  await page.locator('.thread-link[data-thread="bulk-0"]').waitFor();
  check((await page.locator(".thread-link").count()) === 1, "the search shows only ids containing the text (any case)");
  check(await page.locator("#more-threads").isHidden(), "no more pages for one match");
  await page.fill("#thread-query", "support");
  await page.locator("#status").filter({ hasText: 'Loaded 1 thread(s) whose id contains "support"' }).waitFor();
  check((await page.locator(".thread-link").count()) === 1, "one support thread");
  await page.fill("#thread-query", "");
  await page.locator("#more-threads").waitFor({ state: "visible" });
  await link.waitFor();

  // A key that fails next leaves nothing of the old key's list behind, "More threads" included.
  await page.fill("#key", "ew_not-a-real-key-either");
  await page.click("#key-form button[type=submit]");
  await page.locator("#status.error").filter({ hasText: "BEM-021" }).waitFor();
  check(await page.locator("#more-threads").isHidden(), "a failed key hides the stale More threads button");
  check((await page.locator(".thread-link").count()) === 0, "a failed key clears the thread list");

  await page.fill("#key", s.key);
  await page.click("#key-form button[type=submit]");
  await link.waitFor();
  check((await page.inputValue("#key")) === "", "the key is not left in the input");
  check((await page.evaluate(() => sessionStorage.length)) === 1, "the key is kept in sessionStorage");
  check((await page.evaluate(() => localStorage.length)) === 0, "nothing in localStorage");
  check((await page.context().cookies()).length === 0, "no cookies");
  await link.click();

  // Two turns: user + assistant each, newest checkpoint at the head.
  await page.locator("#messages li.msg").nth(3).waitFor();
  check((await page.locator("#messages li.msg").count()) === 4, "4 messages at the head");
  // Escaped: the user's markup is shown as text, not parsed.
  check((await page.locator("#messages").innerText()).includes("my order <b>#42</b> is late"), "message text shown verbatim");
  check((await page.locator("#messages b").count()) === 0, "no markup injected from data");
  const cps = page.locator("#history li.cp");
  await cps.nth(1).waitFor();
  check((await cps.count()) === 2, "2 checkpoints in history");
  check((await page.locator(`#history li.cp[data-checkpoint="${s.second}"] .badge.head`).count()) === 1, "second checkpoint is HEAD");
  // Ids are shown whole and copy whole (a cut id cannot be pasted into checkpoint_id).
  const secondRow = page.locator(`#history li.cp[data-checkpoint="${s.second}"]`);
  check((await secondRow.locator("code.cp-id").innerText()) === s.second, "the checkpoint id is shown whole");
  check((await secondRow.locator(".cp-parent code.id").innerText()) === s.first, "the parent id is shown whole");
  await secondRow.locator(".cp-head button.copy").click();
  await secondRow.locator(".cp-head button.copy").filter({ hasText: "Copied" }).waitFor();
  check((await page.evaluate<string>("navigator.clipboard.readText()")) === s.second, "Copy puts the whole id on the clipboard");
  check((await page.locator("#h-routing").textContent()) === "Routing of the last turn", "at the head: the last turn's routing");
  check((await page.locator("#routing dd").first().innerText()).length > 0, "routing trace shows the model");

  // The state then: one turn.
  await page.click(`#history li.cp[data-checkpoint="${s.first}"] .view-cp`);
  await page.locator("#to-head").waitFor({ state: "visible" });
  check((await page.locator("#messages li.msg").count()) === 2, "2 messages at the first checkpoint");
  // The routing shown is the first turn's, and its heading says so (not "of the last turn").
  const routingHeading = (await page.locator("#h-routing").textContent()) ?? "";
  check(routingHeading.includes(`at checkpoint ${s.first}`), `the routing heading names the viewed checkpoint: ${routingHeading}`);
  const firstRoute = await call<{ channels: { last_route: { model: string } } }>(base, "GET", `/v1/threads/${s.thread}/state?checkpoint_id=${s.first}`, s.key);
  check((await page.locator("#routing dd").first().innerText()) === firstRoute.channels.last_route.model, "the routing is the viewed checkpoint's");

  // The memory panel starts from the scopes the last run loaded (recorded with its routing).
  const lastRun = await call<{ channels: { last_route: { memory_scopes: string[] } } }>(base, "GET", `/v1/threads/${s.thread}/state`, s.key);
  const scopes = await page.inputValue("#scopes");
  check(scopes === lastRun.channels.last_route.memory_scopes.join(", "), `the memory panel defaults to the last run's scopes: ${scopes}`);
  check(scopes.includes(`session:${s.thread}`), "the last run loaded the session");
  await page.click("#memory-form button[type=submit]");
  await page.locator("#memory .facts li").first().waitFor();
  check((await page.locator("#memory").innerText()).includes(s.fact), "the session fact is loaded");

  // The memory report of the run at the first checkpoint: the organization fact, loaded because its scope fit.
  const orgRow = page.locator(`#last-memory tr[data-fact="${s.orgFact}"]`);
  await orgRow.waitFor();
  check((await orgRow.innerText()).includes("fits"), `the report says why the fact loaded: ${await orgRow.innerText()}`);
  check((await page.locator("#last-memory p").innerText()).includes("loaded"), "the report's summary line");

  // Fork from the first checkpoint: a new head on a second branch.
  await page.click(`#history li.cp[data-checkpoint="${s.first}"] .fork-cp`);
  await page.locator("#history li.cp").nth(2).waitFor();
  const head = page.locator('#history li.cp[data-head="true"]');
  check((await head.count()) === 1, "one head");
  const headText = await head.innerText();
  check(headText.includes("branch 2") && headText.includes("fork"), `the head is a fork on branch 2: ${headText}`);
  check((await head.locator(".cp-parent code.id").innerText()) === s.first, "the fork's parent is the first checkpoint, whole");
  check((await page.locator(`#history li.cp[data-checkpoint="${s.second}"]`).innerText()).includes("branch 1"), "the old head stays on branch 1");
  check((await page.locator("#messages li.msg").count()) === 2, "the new head has the first turn only");
  await page.locator("#status").filter({ hasText: "Forked from" }).waitFor();
  // Open the fact list and a tool-free message's metadata so the screenshot shows them.
  await page.click("#memory-form button[type=submit]");
  await page.locator("#memory .facts li").first().waitFor();

  // LangGraph checkpoints (read-only), on their own tab: the panel starts from the open thread, which has none.
  await page.click("#tab-langgraph");
  await page.locator("#lg-form").waitFor({ state: "visible" });
  check(await page.locator("#thread-view").isHidden(), "the LangGraph tab replaces the thread view");
  const formBox = await page.locator("#lg-form").boundingBox();
  check(formBox !== null && formBox.y + formBox.height < 900, `the LangGraph form is in the first screen: ${JSON.stringify(formBox)}`);
  check((await page.inputValue("#lg-thread")) === s.thread, "the LangGraph panel starts from the open thread");
  await page.click("#lg-form button[type=submit]");
  await page.locator("#lg-checkpoints li").filter({ hasText: "No LangGraph checkpoints" }).waitFor();
  await page.fill("#lg-thread", s.graph.thread);
  await page.click("#lg-form button[type=submit]");
  const lgHead = page.locator(`#lg-checkpoints li.lg-cp[data-checkpoint="${s.graph.id}"]`);
  await lgHead.waitFor();
  check((await page.locator("#lg-checkpoints li.lg-cp").count()) === 2, "2 LangGraph checkpoints");
  check((await lgHead.locator(".lg-parent").innerText()).includes(s.graph.parent), "the head's parent is the first checkpoint");
  await lgHead.locator(".lg-pending summary").click();
  await lgHead.locator(".lg-versions summary").click();
  const pending = await lgHead.locator(".lg-pending").innerText();
  check(pending.includes("<i>escalate</i>"), `the pending write shown verbatim: ${pending}`);
  check((await page.locator("#lg-checkpoints i").count()) === 0, "no markup injected from LangGraph values");
  check((await lgHead.locator(".lg-versions").innerText()).includes("topic"), "the channel versions");
  check((await lgHead.locator("code.lg-id").innerText()) === s.graph.id, "the LangGraph checkpoint id is shown whole");

  // The spend budgets over the key (read-only), on their own tab, asked for when it opens.
  await page.click("#tab-budgets");
  const budget = page.locator(`#budgets tr[data-budget="${s.budget}"]`);
  await budget.waitFor();
  check(await page.locator("#langgraph-panel").isHidden(), "the Budgets tab replaces the LangGraph panel");
  const cells = await budget.locator("td").allInnerTexts();
  check(cells[1] === "tenant (e2e)" && cells[2] === "$5.00" && cells[3]?.startsWith("day, from "), `the budget's row: ${cells.join(" | ")}`);
  check(cells[7] !== "never" && Date.parse(cells[7] ?? "") > Date.now(), `the budget resets tomorrow: ${cells[7]}`);
  await page.click("#refresh-budgets");
  await page.locator("#status").filter({ hasText: "Loaded 1 budget(s)." }).waitFor();
  await page.click("#tab-thread");
  await page.locator("#thread").waitFor({ state: "visible" });
}

/** The API reference renders offline: Scalar's viewer from this origin, no CSP violation, no other origin. */
async function docs(page: Page, base: string): Promise<void> {
  await page.goto(`${base}/`);
  await page.click('a[href="/docs"]');
  await page.waitForURL(`${base}/docs`);
  // Rendered from /openapi.json: the document's title and one of its operations.
  await page.getByText("Memory and model routing for AI agents, at the edge.").first().waitFor();
  await page.getByText("Checkpoints of every branch, newest first, paged").first().waitFor();
  // Scalar's hosted features are off (issue 24.15): "Ask AI" uploads the document to Scalar, and
  // "Generate SDKs & MCP" is a sales modal; on a loopback origin both showed and broke the CSP.
  await page.waitForLoadState("networkidle");
  for (const hosted of ["Ask AI", "Generate SDKs", "Generate MCP"])
    check((await page.getByText(hosted).count()) === 0, `/docs shows Scalar's hosted feature "${hosted}"`);
  await page.screenshot({ path: join(ARTIFACTS, "docs.png") });
}

async function main(): Promise<void> {
  const started = Date.now();
  check(existsSync(CHROMIUM), `${CHROMIUM} is missing (apt-get install -y chromium)`);
  mkdirSync(ARTIFACTS, { recursive: true });
  rmSync(STATE, { recursive: true, force: true });
  copyFileSync(join(ROOT, ".dev.vars.example"), ENV_FILE);

  const [port, inspectorPort] = [await freePort(), await freePort()];
  const base = `http://127.0.0.1:${port}`;
  const { proc, log } = startWrangler(port, inspectorPort);
  const stop = () => stopWrangler(proc);
  process.on("exit", stop);
  for (const sig of ["SIGINT", "SIGTERM"] as const) process.on(sig, () => (stop(), process.exit(130)));

  const userDataDir = mkdtempSync(join(tmpdir(), "edgeweave-chromium-"));
  let context: Awaited<ReturnType<typeof chromium.launchPersistentContext>> | undefined;
  try {
    await waitForHealth(base, proc, log);
    await checkQuietStart(base, log);
    const seeded = await seed(base);
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM,
      headless: true,
      args: [
        "--no-sandbox",
        "--headless",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-quic",
        "--no-first-run",
        "--disable-component-update",
        "--disable-sync",
      ],
      viewport: { width: 1280, height: 900 },
      permissions: ["clipboard-read", "clipboard-write"],
    });
    const page = context.pages()[0] ?? (await context.newPage());
    page.setDefaultTimeout(10_000);
    const problems: string[] = [];
    // The refusals the test asks for: two wrong keys (401) and the operator key (403).
    const expectedRefusals: Record<string, number> = { "401": 2, "403": 1 };
    page.on("console", (m) => {
      const status = /status of (\d{3})/.exec(m.text())?.[1];
      if (status !== undefined && (expectedRefusals[status] ?? 0) > 0) {
        expectedRefusals[status]!--;
        return;
      }
      if (m.type() === "error" || /Content.Security.Policy/i.test(m.text())) problems.push(`console: ${m.text()}`);
    });
    page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
    page.on("request", (r) => !r.url().startsWith(base) && problems.push(`request to another origin: ${r.url()}`));
    // Every API call the page makes carries the key as a bearer header and no cookie.
    page.on("request", (r) => {
      if (!r.url().startsWith(`${base}/v1/`)) return;
      const h = r.headers();
      if (!h.authorization?.startsWith("Bearer ") || h.cookie !== undefined) problems.push(`API call without the bearer key or with a cookie: ${r.url()}`);
    });
    try {
      await drive(page, base, seeded);
    } finally {
      await page.screenshot({ path: SCREENSHOT, fullPage: true }).catch(() => undefined);
    }
    await docs(page, base);
    check(problems.length === 0, `the page reported problems:\n${problems.join("\n")}`);

    const history = await call<{ checkpoints: { id: string; parent_id: string | null; is_head: boolean; source: string }[] }>(
      base,
      "GET",
      `/v1/threads/${seeded.thread}/history`,
      seeded.key,
    );
    const head = history.checkpoints.find((c) => c.is_head);
    check(
      history.checkpoints.length === 3 && head?.parent_id === seeded.first && head.source === "fork",
      "the API agrees: a fork of the first checkpoint is the head",
    );
    console.log(`inspector e2e passed in ${((Date.now() - started) / 1000).toFixed(1)} s; screenshot: ${SCREENSHOT}`);
  } finally {
    await context?.close().catch(() => undefined);
    stop();
    rmSync(userDataDir, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? (e.stack ?? e.message) : e);
  process.exitCode = 1;
});
