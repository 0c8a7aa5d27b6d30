/**
 * edgeweave from an MCP client (@modelcontextprotocol/sdk): the memory tools and the thread tools,
 * with the grants of the bearer key.
 *
 *   npm start                                    # in another terminal
 *   EDGEWEAVE_KEY=<tenant key> npx tsx examples/mcp-client.ts
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const transport = new StreamableHTTPClientTransport(new URL(`${process.env.EDGEWEAVE_URL ?? "http://127.0.0.1:8787"}/mcp`), {
  requestInit: { headers: { authorization: `Bearer ${process.env.EDGEWEAVE_KEY ?? ""}` } },
});
const client = new Client({ name: "my-assistant", version: "1.0.0" });
await client.connect(transport);
console.log((await client.listTools()).tools.map((t) => t.name)); // remember, recall, forget, search_threads, get_thread

const saved = await client.callTool({
  name: "remember",
  arguments: { scope: "organization:acme", kind: "preference", key: "editor", text: "The user edits in Helix." },
});
if (saved.isError) throw new Error(`remember: ${JSON.stringify(saved.content)}`); // a tool error names its BEM- code
const found = await client.callTool({ name: "recall", arguments: { query: "which editor?", scopes: ["organization:acme"] } });
console.log(found.content);
const threads = await client.callTool({ name: "search_threads", arguments: { query: "demo" } });
console.log(threads.content);
await client.close();
