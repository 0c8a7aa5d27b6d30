import { exports } from "cloudflare:workers";
import { Client } from "@langchain/langgraph-sdk";

/** Where the worker under test serves LangGraph's API, as the SDK's apiUrl. */
export const API_URL = "http://edgeweave.test/v1/agent-protocol";

/** The worker under test as a fetch; `seen` records each request's method and path. */
export const workerFetch =
  (seen?: string[]): typeof fetch =>
  (input, init) => {
    const req = new Request(input, init);
    seen?.push(`${req.method} ${new URL(req.url).pathname}`);
    return exports.default.fetch(req);
  };

/** LangGraph's own SDK Client pointed at the worker (no retries: a failure shows as it is). */
export const sdkClient = (apiKey: string, seen?: string[]) =>
  new Client({ apiUrl: API_URL, apiKey, callerOptions: { fetch: workerFetch(seen), maxRetries: 0 } });

/** Collects a run's stream parts. */
export async function collect<T>(parts: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const p of parts) out.push(p);
  return out;
}
