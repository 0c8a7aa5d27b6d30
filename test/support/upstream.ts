/**
 * The far side of the network, faked. Tests register handlers per origin
 * (e.g. "https://api.openai.com"); any other outbound request throws and is
 * recorded, so an unmocked request fails the test instead of reaching out.
 */
export type UpstreamHandler = (req: Request) => Response | Promise<Response>;

export type RecordedRequest = { url: string; method: string; headers: Record<string, string>; body: string };

const handlers = new Map<string, UpstreamHandler>();
// Fakes every test shares (the OTLP collector): served before the per-test ones, never cleared or recorded.
const standing = new Map<string, UpstreamHandler>();
const recorded: RecordedRequest[] = [];
const unmocked: string[] = [];
// Every unmocked request of the current test, for the global check in test/setup.ts (not cleared by clearUpstream).
const strays: string[] = [];
let straysExpected = false;
let realFetch: typeof fetch | undefined;

export function installUpstream(): void {
  if (realFetch) return;
  realFetch = globalThis.fetch;
  globalThis.fetch = async (input: RequestInfo | URL, init?: RequestInit) => {
    const req = new Request(input, init);
    const origin = new URL(req.url).origin;
    const shared = standing.get(origin);
    if (shared) return shared(req);
    const handler = handlers.get(origin);
    if (!handler) {
      unmocked.push(`${req.method} ${req.url}`);
      strays.push(`${req.method} ${req.url}`);
      throw new TypeError(`Unmocked outbound request: ${req.method} ${req.url}`);
    }
    const body = req.method === "GET" || req.method === "HEAD" ? "" : await req.clone().text();
    recorded.push({ url: req.url, method: req.method, headers: Object.fromEntries(req.headers), body });
    return handler(req);
  };
}

/** Serve `origin` with `handler` for the whole run, apart from the per-test fakes (their requests are not recorded). */
export function standingUpstream(origin: string, handler: UpstreamHandler): void {
  standing.set(new URL(origin).origin, handler);
}

/** Serve `origin` with `handler` until `clearUpstream()`. */
export function mockUpstream(origin: string, handler: UpstreamHandler): void {
  handlers.set(new URL(origin).origin, handler);
}

export function clearUpstream(): void {
  handlers.clear();
  recorded.length = 0;
  unmocked.length = 0;
}

export const upstreamRequests = (): readonly RecordedRequest[] => recorded;
export const unmockedRequests = (): readonly string[] => unmocked;

/** For a test that reaches an unknown host on purpose (to test connection failures). */
export function expectUnmockedRequests(): void {
  straysExpected = true;
}

/** The current test's unmocked requests and whether it expected them; resets both. */
export function takeStrays(): { strays: string[]; expected: boolean } {
  const out = { strays: strays.splice(0), expected: straysExpected };
  straysExpected = false;
  return out;
}
