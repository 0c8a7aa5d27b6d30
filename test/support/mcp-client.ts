import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { exports } from "cloudflare:workers";

type Text = { type: string; text: string };
type Result = { content: Text[]; isError?: boolean };

/** The MCP SDK's own client, its HTTP requests going to the worker under test. */
export async function mcpClient(key: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL("http://x/mcp"), {
    requestInit: { headers: { authorization: `Bearer ${key}` } },
    fetch: (url, init) => exports.default.fetch(new Request(url, init)),
  });
  const client = new Client({ name: "edgeweave-test", version: "1.0.0" });
  await client.connect(transport);
  return client;
}

/** Calls a tool: whether it failed, its first text block, and that text as JSON when it did not. */
export const callJson = async (c: Client, name: string, args: Record<string, unknown>) => {
  const r = (await c.callTool({ name, arguments: args })) as Result;
  return { error: r.isError === true, text: r.content[0]!.text, json: r.isError ? undefined : (JSON.parse(r.content[0]!.text) as Record<string, unknown>) };
};
