/**
 * Browser test of LangGraph's API (/v1/agent-protocol) through the SDK's own React client, run in Node:
 * `npm run test:e2e`. A page of ours built on `useStream` (langgraph-page/main.tsx, bundled here with
 * esbuild) is served from its own loopback origin, so every call is a cross-origin one as an app's would
 * be, against `wrangler dev` (langgraph-worker.ts: CORS open to the page, gpt-4o-mini on a fake upstream
 * that streams a word at a time). Debian's chromium driven by playwright-core: send and see tokens
 * arrive, reload and find the thread in the history list, continue it, stop a run mid-answer (the thread
 * stays at its last checkpoint), and approve an interrupted tool call of the `approver` agent.
 * Saves test-artifacts/langgraph-react.png. Everything started is stopped at the end, also on failure.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "esbuild";
import { chromium, type Page } from "playwright-core";
import { LONG_WORDS } from "./fake-openai-server";
import { type LangGraphWorker, portAt, startLangGraphWorker } from "./langgraph-worker";

const ROOT = new URL("../..", import.meta.url).pathname;
const SCREENSHOT = join(ROOT, "test-artifacts", "langgraph-react.png");
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

function check(cond: unknown, message: string): asserts cond {
  if (!cond) throw new Error(`check failed: ${message}`);
}

/** The page, bundled, on its own origin. */
async function servePage(port: number): Promise<{ origin: string; close(): Promise<void> }> {
  const bundle = await build({
    entryPoints: [join(ROOT, "test", "e2e", "langgraph-page", "main.tsx")],
    bundle: true,
    write: false,
    format: "esm",
    platform: "browser",
    target: "es2022",
    jsx: "automatic",
    define: { "process.env.NODE_ENV": '"production"' },
    logLevel: "error",
  });
  const js = bundle.outputFiles[0]!.text;
  const html = '<!doctype html><meta charset="utf-8"><title>useStream e2e</title><div id="root"></div><script type="module" src="/app.js"></script>';
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    if (path === "/app.js") res.writeHead(200, { "content-type": "text/javascript" }).end(js);
    else if (path === "/") res.writeHead(200, { "content-type": "text/html" }).end(html);
    else if (path === "/favicon.ico") res.writeHead(204).end();
    else res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(port, "127.0.0.1", () => r()));
  return { origin: `http://127.0.0.1:${port}`, close: () => new Promise((r) => server.close(() => r())) };
}

type Api = <T>(method: string, path: string, body?: unknown) => Promise<T>;

function apiOf(w: LangGraphWorker): Api {
  return async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const res = await fetch(w.apiUrl + path, {
      method,
      headers: { "x-api-key": w.key, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path} → ${res.status} ${text}`);
    return JSON.parse(text) as T;
  };
}

const messages = (page: Page) => page.locator("#messages li.msg");
const idle = (page: Page) => page.locator('#state[data-loading="false"]').waitFor();

async function say(page: Page, text: string): Promise<void> {
  await page.fill("#input", text);
  await page.click("#send");
}

type Run = { run_id: string; status: string };
type State = { values: { messages: { type: string; content: unknown }[]; user_name?: string }; next: string[] };

async function drive(page: Page, pageUrl: string, api: Api, w: LangGraphWorker): Promise<void> {
  await page.goto(pageUrl);
  await page.locator('#threads[data-loaded="true"]').waitFor({ state: "attached" });

  // Send: the answer streams in (the page rendered it partly before whole) and the thread is in the URL.
  await say(page, "Hello there");
  await messages(page).nth(1).filter({ hasText: "Echo: Hello there" }).waitFor();
  await idle(page);
  const threadId = new URL(page.url()).searchParams.get("thread");
  check(threadId, `the page keeps its thread in the URL: ${page.url()}`);
  const rendered = await page.evaluate<string[]>("window.renderedAi");
  check(rendered.length > 2 && rendered.at(-1) === "Echo: Hello there", `the answer arrived in pieces: ${JSON.stringify(rendered)}`);
  check(
    rendered.slice(0, -1).every((t) => "Echo: Hello there".startsWith(t)),
    `each piece grows the answer: ${JSON.stringify(rendered)}`,
  );

  // Reload: the thread comes back from the server, and it is in the history list (a search by graph_id).
  await page.reload();
  await messages(page).nth(1).filter({ hasText: "Echo: Hello there" }).waitFor();
  check((await messages(page).count()) === 2, "after a reload: the two messages of the thread");
  await page.goto(pageUrl);
  const listed = page.locator(`#threads button.thread[data-thread="${threadId}"]`);
  await listed.waitFor();
  check((await messages(page).count()) === 0, "a new page opens no thread");
  await listed.click();
  await messages(page).nth(1).waitFor();

  // Continue it: the model is sent the whole thread.
  await say(page, "And again");
  await messages(page).nth(3).filter({ hasText: "Echo: And again" }).waitFor();
  await idle(page);
  const second = w.upstream.at(-1)!;
  check(
    second.messages.filter((m) => m.role === "user").length === 2,
    `the second turn's model call carries both user messages: ${JSON.stringify(second.messages)}`,
  );

  // Reload mid-answer: the run went on without its client, and the page rejoins it (reconnectOnMount: the
  // run's id in sessionStorage, its kept events replayed) and shows the whole answer.
  await say(page, "Tell me something long");
  await messages(page).nth(5).filter({ hasText: "word3" }).waitFor();
  await page.reload();
  await messages(page)
    .nth(5)
    .filter({ hasText: `word${LONG_WORDS - 1}` })
    .waitFor({ timeout: 30_000 });
  await idle(page);
  const rejoined = await api<State>("GET", `/threads/${threadId}/state`);
  check(rejoined.values.messages.length === 6, `the run whose page reloaded was saved: ${rejoined.values.messages.length} messages`);

  // Stop a run mid-answer: the run is cancelled, the thread keeps its last checkpoint and takes the next turn.
  await say(page, "Tell me something long");
  await messages(page).nth(7).filter({ hasText: "word3" }).waitFor();
  await page.click("#stop");
  await idle(page);
  const stopped = await waitFor(async () => {
    const [run] = await api<Run[]>("GET", `/threads/${threadId}/runs?limit=1`);
    return run && run.status !== "running" && run.status !== "pending" ? run : undefined;
  }, "the stopped run ends");
  check(stopped.status === "interrupted", `a stopped run is interrupted: ${JSON.stringify(stopped)}`);
  const afterStop = await api<State>("GET", `/threads/${threadId}/state`);
  check(afterStop.values.messages.length === 6, `a stopped run saves nothing: ${afterStop.values.messages.length} messages`);
  await say(page, "Still there?");
  await page.locator("#messages li.msg[data-type=ai]").filter({ hasText: "Echo: Still there?" }).waitFor();
  await idle(page);

  // Approve an interrupted tool call: the approver agent asks before set_user_name runs.
  await page.goto(pageUrl.replace("assistant=assistant", "assistant=approver"));
  await say(page, "Please call me Ann");
  const action = page.locator('#interrupt .action[data-name="set_user_name"]');
  await action.waitFor();
  check((await action.innerText()).includes('"new_name":"Ann"'), `the interrupt shows the call: ${await action.innerText()}`);
  await idle(page);
  const approverThread = new URL(page.url()).searchParams.get("thread")!;
  const waiting = await api<State>("GET", `/threads/${approverThread}/state`);
  check(waiting.next[0] === "human_in_the_loop" && waiting.values.user_name === undefined, "the call waits, unrun");
  await page.click("#approve");
  await page.locator("#messages li.msg[data-type=tool]").filter({ hasText: "User name set to Ann." }).waitFor();
  await page.locator("#messages li.msg[data-type=ai]").filter({ hasText: "The tool answered: User name set to Ann." }).waitFor();
  await idle(page);
  check(await page.locator("#interrupt").isHidden(), "no interrupt once approved");
  const done = await api<State>("GET", `/threads/${approverThread}/state`);
  check(done.values.user_name === "Ann" && done.next.length === 0, `the approved call ran: ${JSON.stringify(done)}`);
}

async function waitFor<T>(probe: () => Promise<T | undefined>, what: string): Promise<T> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const got = await probe();
    if (got !== undefined) return got;
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function main(): Promise<void> {
  const started = Date.now();
  const page = await servePage(await portAt(3));
  let worker: LangGraphWorker | undefined;
  const userDataDir = mkdtempSync(join(tmpdir(), "edgeweave-chromium-"));
  let context: Awaited<ReturnType<typeof chromium.launchPersistentContext>> | undefined;
  try {
    worker = await startLangGraphWorker({ corsOrigin: page.origin, wordDelayMs: 60, firstPort: 0 });
    const w = worker;
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM,
      headless: true,
      args: ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking", "--no-first-run", "--disable-component-update"],
      viewport: { width: 1100, height: 800 },
    });
    const tab = context.pages()[0] ?? (await context.newPage());
    tab.setDefaultTimeout(15_000);
    const problems: string[] = [];
    tab.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
    tab.on("console", (m) => m.type() === "error" && problems.push(`console: ${m.text()}`));
    tab.on("response", (r) => r.status() >= 400 && problems.push(`${r.status()}: ${r.request().method()} ${r.url()}`));
    // A navigation aborts the requests of the page it leaves, and a stopped run its stream: not failures.
    tab.on("requestfailed", (r) => r.failure()?.errorText !== "net::ERR_ABORTED" && problems.push(`request failed: ${r.url()} ${r.failure()?.errorText}`));
    const url = `${page.origin}/?${new URLSearchParams({ api: w.apiUrl, key: w.key, assistant: "assistant" })}`;
    try {
      await drive(tab, url, apiOf(w), w);
    } finally {
      await tab.screenshot({ path: SCREENSHOT, fullPage: true }).catch(() => undefined);
    }
    check(problems.length === 0, `the page reported problems:\n${problems.join("\n")}`);
    console.log(`useStream e2e passed in ${((Date.now() - started) / 1000).toFixed(1)} s; screenshot: ${SCREENSHOT}`);
  } finally {
    await context?.close().catch(() => undefined);
    await worker?.stop();
    await page.close();
    rmSync(userDataDir, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? (e.stack ?? e.message) : e);
  process.exitCode = 1;
});
