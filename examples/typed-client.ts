/**
 * A typed client for edgeweave with hono/client: paths, query, params, request bodies
 * and response bodies all come from the worker's own route definitions (`App`).
 *
 *   npm start                                    # in another terminal
 *   EDGEWEAVE_KEY=<tenant admin key> npx tsx examples/typed-client.ts
 */
import { hc } from "hono/client";
import type { App } from "../src/index";

const baseUrl = process.env.EDGEWEAVE_URL ?? "http://127.0.0.1:8787";
const key = process.env.EDGEWEAVE_KEY;
if (!key) throw new Error("Set EDGEWEAVE_KEY to a tenant key (see docs/getting-started.md)");

const client = hc<App>(baseUrl, { headers: { authorization: `Bearer ${key}` } });

// GET /v1/models: `data` is typed as the Model schema.
const models = await client.v1.models.$get();
if (!models.ok) throw new Error(`GET /v1/models: ${models.status} ${await models.text()}`);
for (const m of (await models.json()).data) console.log(`${m.id.padEnd(24)} ${m.provider.padEnd(10)} available=${m.available}`);

// POST /v1/memory/facts: the body is checked against RememberFact at compile time.
const remembered = await client.v1.memory.facts.$post({ json: { scope: "organization:acme", kind: "style", text: "Use short sentences." } });
if (remembered.status !== 201) throw new Error(`POST /v1/memory/facts: ${remembered.status} ${await remembered.text()}`);
const fact = await remembered.json();
console.log(`remembered ${fact.id} in ${fact.scope}`);

// GET /v1/memory/facts?scope=…: query parameters are typed too.
const page = await client.v1.memory.facts.$get({ query: { scope: "organization:acme", limit: "10" } });
if (page.status !== 200) throw new Error(`GET /v1/memory/facts: ${page.status} ${await page.text()}`);
for (const f of (await page.json()).facts) console.log(`[${f.kind}] ${f.text}`);
