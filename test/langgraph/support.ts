import { AsyncLocalStorage } from "node:async_hooks";
import { AsyncLocalStorageProviderSingleton } from "@langchain/core/singletons";
import { exports } from "cloudflare:workers";
import { Client } from "@langchain/langgraph-sdk";
import { EdgeweaveSaver } from "../../src/langgraph-client/saver";
import { createKey, createTenant, type TestTenant } from "../support/tenants";

/** The Worker under test as a fetch (what a LangGraph app would call over the network), counting calls. */
export function workerFetch(counter?: { calls: number; paths?: string[] }): typeof fetch {
  return (input, init) => {
    if (counter) {
      counter.calls++;
      counter.paths?.push(`${init?.method ?? "GET"} ${new URL(String(input instanceof Request ? input.url : input)).pathname}`);
    }
    return exports.default.fetch(new Request(input, init));
  };
}

export const BASE_URL = "http://edgeweave.test";

/** @langchain/langgraph-sdk's Client on the store routes, with a tenant key, calling the Worker under test. */
export const sdkClient = (key: string): Client =>
  new Client({
    apiUrl: `${BASE_URL}/v1/langgraph`,
    defaultHeaders: { authorization: `Bearer ${key}` },
    callerOptions: { fetch: workerFetch(), maxRetries: 0 },
  });

export function saverFor(key: string, counter?: { calls: number; paths?: string[] }): EdgeweaveSaver {
  return new EdgeweaveSaver({ baseUrl: BASE_URL, apiKey: key, fetch: workerFetch(counter) });
}

/** A fresh tenant per saver, as each MemorySaver starts empty. */
export async function freshSaver(): Promise<{ saver: EdgeweaveSaver; tenant: TestTenant }> {
  const tenant = await createTenant();
  return { saver: saverFor(tenant.adminKey), tenant };
}

/** A member key of a fresh tenant that reaches every thread (and `organization:acme`) but may not rewrite history. */
export async function freshMember(): Promise<{ key: string; tenant: TestTenant }> {
  const tenant = await createTenant();
  const { key } = await createKey(tenant.tenant, { role: "member", scopes: ["session:*", "organization:acme"] });
  return { key, tenant };
}

// Vite resolves @langchain/langgraph to its "browser" build here, which leaves out the
// AsyncLocalStorage set-up that interrupt() and getStore() need; workerd has it (nodejs_compat).
AsyncLocalStorageProviderSingleton.initializeGlobalInstance(new AsyncLocalStorage());
