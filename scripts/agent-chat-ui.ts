/**
 * LangChain's Agent Chat UI against edgeweave, in Chromium: `npx tsx scripts/agent-chat-ui.ts [--source DIR] [--shots DIR]`.
 *
 * Agent Chat UI is another project: nothing of it is in this repository, and `npm install` here installs
 * none of it. This script uses a checkout given with --source (else it clones github.com/langchain-ai/agent-chat-ui
 * into ~/.cache/edgeweave/agent-chat-ui), installs its packages there from npm when they are missing, starts the
 * worker as test/e2e/langgraph-worker.ts does (`wrangler dev`, CORS open to the UI, gpt-4o-mini on a fake upstream
 * that streams a word at a time, so a run can be watched and stopped), starts the UI's `next dev` pointed at
 * /v1/agent-protocol with a tenant key, and drives it: send and see the answer stream, reload and find the thread
 * in the history list, continue it, stop a run, approve the `approver` agent's tool call. A screenshot of each
 * step goes to --shots (default test-artifacts/agent-chat-ui). Ports: E2E_PORT and the next ones (else free
 * ones) for the worker; UI_PORT (else 3000) for the UI. Needs /usr/bin/chromium (CHROMIUM_PATH).
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { chromium, type Page } from "playwright-core";
import { LONG_WORDS } from "../test/e2e/fake-openai-server";
import { type LangGraphWorker, startLangGraphWorker } from "../test/e2e/langgraph-worker";

const ROOT = new URL("..", import.meta.url).pathname;
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const REPO = "https://github.com/langchain-ai/agent-chat-ui";

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

function check(cond: unknown, message: string): asserts cond {
  if (!cond) throw new Error(`check failed: ${message}`);
}

function sh(cmd: string, args: string[], cwd: string): void {
  const r = spawnSync(cmd, args, { cwd, stdio: "inherit" });
  check(r.status === 0, `${cmd} ${args.join(" ")} exited ${r.status} in ${cwd}`);
}

/** The UI's checkout, with its packages installed (both on first use only). */
function ensureSource(): string {
  const dir = resolve(arg("--source") ?? join(homedir(), ".cache", "edgeweave", "agent-chat-ui"));
  if (!existsSync(join(dir, "package.json"))) sh("git", ["clone", "--depth", "1", REPO, dir], ROOT);
  if (!existsSync(join(dir, "node_modules", ".bin", "next"))) sh("npm", ["install", "--no-audit", "--no-fund"], dir);
  return dir;
}

/** `next dev` of the UI on loopback, pointed at the worker; resolves once it answers. */
async function startUi(dir: string, port: number, w: LangGraphWorker): Promise<{ url: string; stop(): void }> {
  const child: ChildProcess = spawn(join(dir, "node_modules", ".bin", "next"), ["dev", "-p", String(port), "-H", "127.0.0.1"], {
    cwd: dir,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, NEXT_PUBLIC_API_URL: w.apiUrl, NEXT_PUBLIC_ASSISTANT_ID: "assistant", NEXT_TELEMETRY_DISABLED: "1" },
  });
  let log = "";
  child.stdout?.on("data", (d: Buffer) => (log += d.toString()));
  child.stderr?.on("data", (d: Buffer) => (log += d.toString()));
  const stop = () => {
    if (child.pid && child.exitCode === null) process.kill(-child.pid, "SIGTERM");
  };
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 180_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`next dev exited (${child.exitCode}):\n${log.slice(-3000)}`);
    if (
      await fetch(url).then(
        (r) => r.ok,
        () => false,
      )
    )
      return { url, stop };
    await new Promise((r) => setTimeout(r, 500));
  }
  stop();
  throw new Error(`next dev did not answer in 180 s:\n${log.slice(-3000)}`);
}

type State = { values: { messages: unknown[]; user_name?: string }; next: string[] };
type Run = { run_id: string; status: string };

async function drive(page: Page, ui: string, w: LangGraphWorker, shot: (name: string) => Promise<void>): Promise<void> {
  const api = async <T>(path: string): Promise<T> => {
    const res = await fetch(w.apiUrl + path, { headers: { "x-api-key": w.key } });
    check(res.ok, `GET ${path} → ${res.status}`);
    return (await res.json()) as T;
  };
  const input = page.getByPlaceholder("Type your message...");
  const say = async (text: string) => {
    await input.fill(text);
    await page.getByRole("button", { name: "Send" }).click();
  };
  const idle = () => page.getByRole("button", { name: "Send" }).waitFor();

  // Send, and see the answer stream in.
  await page.goto(ui);
  await say("Hello from Agent Chat UI");
  await page.getByText("Echo: Hello from").waitFor();
  await shot("1-streamed");
  await idle();
  await page.waitForURL(/threadId=/);
  const threadId = new URL(page.url()).searchParams.get("threadId")!;

  // Reload: the thread is back, and in the history list (its first message names it).
  await page.reload();
  await page.getByText("Echo: Hello from Agent Chat UI").waitFor();
  await page.goto(ui);
  // The sidebar (off screen while closed) has a toggle too: the header's is the last.
  await page.locator("button:has(svg.lucide-panel-right-close)").last().click();
  await page.getByText("Thread History").waitFor();
  const history = page.getByRole("button", { name: "Hello from Agent Chat UI" }).first();
  await history.waitFor();
  await shot("2-history");
  await history.click();
  await page.waitForURL(new RegExp(`threadId=${threadId}`));
  await page.getByText("Echo: Hello from Agent Chat UI").waitFor();

  // Continue it.
  await say("And a second question");
  await page.getByText("Echo: And a second question").waitFor();
  await idle();
  await shot("3-continued");

  // Stop a run mid-answer. The UI's Cancel stops its stream at once; it asked on_disconnect "continue"
  // (stream_resumable), so the run goes on to its end and is saved, as on LangGraph's own server.
  await say("Tell me something long");
  await page.getByText("word3 ", { exact: false }).waitFor();
  // The page scrolls as the answer grows, so the button never holds still for Playwright's stability wait.
  await page.getByRole("button", { name: "Cancel" }).click({ force: true });
  await idle();
  await shot("4-stopped");
  check((await page.getByText(`word${LONG_WORDS - 1}`).count()) === 0, "the stream stopped before the answer's end");
  const [run] = await api<Run[]>(`/threads/${threadId}/runs?limit=1`);
  check(run !== undefined, "the run is listed");
  await api(`/threads/${threadId}/runs/${run.run_id}/join`);
  check((await api<Run>(`/threads/${threadId}/runs/${run.run_id}`)).status === "success", "the run went on to its end");
  await page.reload();
  await page.getByText(`word${LONG_WORDS - 1}`).waitFor();
  await shot("5-reloaded-after-stop");

  // Approve an interrupted tool call (the approver agent asks before set_user_name runs).
  await page.goto(`${ui}/?assistantId=approver`);
  await say("Please call me Ann");
  await page.getByText("set_user_name").first().waitFor();
  await shot("6-interrupt");
  await page.getByRole("button", { name: "Approve" }).click();
  await page.getByText("The tool answered: User name set to Ann.").waitFor();
  await idle();
  await shot("7-approved");
  const approverThread = new URL(page.url()).searchParams.get("threadId")!;
  const done = await api<State>(`/threads/${approverThread}/state`);
  check(done.values.user_name === "Ann", `the approved call ran: ${JSON.stringify(done.values)}`);
}

async function main(): Promise<void> {
  const shots = resolve(arg("--shots") ?? join(ROOT, "test-artifacts", "agent-chat-ui"));
  mkdirSync(shots, { recursive: true });
  const source = ensureSource();
  const uiPort = Number(process.env.UI_PORT ?? 3000);
  const origin = `http://127.0.0.1:${uiPort}`;
  const worker = await startLangGraphWorker({ corsOrigin: origin, wordDelayMs: 100, firstPort: 5 });
  let ui: { url: string; stop(): void } | undefined;
  const userDataDir = mkdtempSync(join(tmpdir(), "edgeweave-chromium-"));
  let context: Awaited<ReturnType<typeof chromium.launchPersistentContext>> | undefined;
  try {
    ui = await startUi(source, uiPort, worker);
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM,
      headless: true,
      args: ["--no-sandbox", "--headless", "--disable-gpu", "--no-first-run", "--disable-component-update"],
      viewport: { width: 1280, height: 860 },
    });
    // The UI's API key field is kept in localStorage; the page reads it from there.
    await context.addInitScript((key: string) => localStorage.setItem("lg:chat:apiKey", key), worker.key);
    const page = context.pages()[0] ?? (await context.newPage());
    page.setDefaultTimeout(60_000);
    page.on("console", (m) => m.type() === "error" && console.error(`[page console] ${m.text()}`));
    page.on("pageerror", (e) => console.error(`[page error] ${e.message}`));
    page.on("response", (r) => r.status() >= 400 && console.error(`[page] ${r.status()} ${r.request().method()} ${r.url()}`));
    const shot = (name: string) => page.screenshot({ path: join(shots, `${name}.png`) }).then(() => undefined);
    try {
      await drive(page, ui.url, worker, shot);
    } catch (e) {
      await shot("failed").catch(() => undefined);
      throw e;
    }
    console.log(`Agent Chat UI held the conversation against edgeweave; screenshots in ${shots}`);
  } finally {
    await context?.close().catch(() => undefined);
    ui?.stop();
    await worker.stop();
    rmSync(userDataDir, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? (e.stack ?? e.message) : e);
  process.exitCode = 1;
});
