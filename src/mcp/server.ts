import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { type CallToolRequest, CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import type { jsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/types.js";
import type { Principal } from "../core/principal";
import { isAppError } from "../core/errors";
import type { Runtime, ToolCaller } from "../pipeline/runtime";
import { factsQueryHolder } from "../pipeline/spend-guard";
import { modelVisibleSchema, type Tool } from "../pipeline/tools/define";
import { MCP_MEMORY_TOOLS } from "./memory-tools";
import { THREAD_TOOLS } from "./thread-tools";
import { errorText, log } from "../core/log";

/**
 * The MCP endpoint: edgeweave's memory tools (remember, recall, forget) and thread
 * reading (search_threads, get_thread) for MCP clients — desktop assistants, IDEs —
 * over Streamable HTTP, stateless (a server and transport per request; nothing is
 * kept between requests). The caller is the bearer key's principal, so every tool acts
 * with that key's grants, as when a model calls them in a run (the defaults for a call that
 * names no scope are MCP's own: ./memory-tools).
 */

const TOOLS: readonly Tool[] = [...MCP_MEMORY_TOOLS, ...THREAD_TOOLS];
const ToolsCallMethod = CallToolRequestSchema.pick({ method: true }).loose();

/** The SDK validates only a client's elicitation answer, and this server elicits nothing (so ajv stays out of the bundle: ./ajv-absent). */
const noElicitation: jsonSchemaValidator = {
  getValidator: () => () => ({ valid: false, data: undefined, errorMessage: "edgeweave's MCP server elicits nothing" }),
};

/** Outside a run there are no memory layers: MCP's memory tools (./memory-tools) give their own defaults. */
function callerFor(env: Env, principal: Principal, waitUntil: (p: Promise<unknown>) => void): ToolCaller {
  const budget = factsQueryHolder(env, principal, waitUntil);
  return { env, principal, scopes: [], ...(budget ? { budget } : {}) };
}

function runtimeFor(caller: ToolCaller): Runtime {
  return { model: { name: "mcp", max_tokens: 0 }, context: {}, agent: { name: "mcp" }, now: () => Date.now(), caller };
}

function mcpServer(env: Env, principal: Principal, waitUntil: (p: Promise<unknown>) => void): Server {
  const server = new Server({ name: "edgeweave", version: "0.1.0" }, { capabilities: { tools: {} }, jsonSchemaValidator: noElicitation });
  const byName = new Map(TOOLS.map((t) => [t.name, t]));
  const runtime = runtimeFor(callerFor(env, principal, waitUntil));
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: TOOLS.map((t) => ({ name: t.name, description: t.description, inputSchema: { ...modelVisibleSchema(t), additionalProperties: false } })),
  }));
  // The calls of one JSON-RPC batch run one after another, not together: each then sees what the
  // previous ones wrote, so quota checks (the tenant's facts) hold within a batch, and a batch adds
  // at most one write in flight to the overshoot bound of concurrent requests.
  let previous: Promise<unknown> = Promise.resolve();
  // Registered with the method alone: the SDK's own tools/call check then answers params that do not
  // parse with -32602 Invalid params; registered with CallToolRequestSchema, its generic parse ran first
  // and answered -32603 Internal error with the parser's dump.
  server.setRequestHandler(ToolsCallMethod, (raw) => {
    const req = CallToolRequestSchema.parse(raw);
    const turn = previous.then(() => callTool(req));
    previous = turn.catch(() => undefined);
    return turn;
  });
  const callTool = async (req: CallToolRequest) => {
    const fail = (text: string) => ({ content: [{ type: "text" as const, text }], isError: true });
    // Refusals of the call itself carry a code like every other tool error (BEM-011: the request failed validation).
    const tool = byName.get(req.params.name);
    if (!tool) return fail(`BEM-011: Unknown tool '${req.params.name.slice(0, 64)}'. Available: ${[...byName.keys()].join(", ")}`);
    const args = req.params.arguments ?? {};
    // An argument the tool does not take is refused, not dropped: a misspelt `query` would list every thread.
    const takes = Object.keys(modelVisibleSchema(tool).properties ?? {});
    const unknown = Object.keys(args).filter((k) => !takes.includes(k));
    if (unknown.length > 0) {
      const names = unknown.map((k) => `'${k.slice(0, 64)}'`).join(", ");
      const verb = unknown.length === 1 ? "is not an argument" : "are not arguments";
      return fail(`BEM-011: Invalid arguments for '${tool.name}': ${names} ${verb} it takes (${takes.join(", ")})`);
    }
    const checked = tool.validate(args);
    if (!checked.ok) return fail(`BEM-011: Invalid arguments for '${tool.name}': ${checked.error}`);
    try {
      const out = await tool.handler(checked.value, { ...runtime, toolCallId: crypto.randomUUID(), state: { messages: [] } });
      return { content: [{ type: "text" as const, text: typeof out === "string" ? out : JSON.stringify(out) }] };
    } catch (e) {
      // A refusal (grants, unknown fact) is the tool's answer; internals never leave the worker.
      if (isAppError(e)) return fail(`${e.code}: ${e.message}`);
      log.error("mcp", { tool: tool.name, message: errorText(e) });
      return fail("Internal error");
    }
  };
  return server;
}

/** Answers one MCP HTTP request for an authenticated principal. */
export async function handleMcp(req: Request, env: Env, principal: Principal, waitUntil: (p: Promise<unknown>) => void): Promise<Response> {
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  const server = mcpServer(env, principal, waitUntil);
  await server.connect(transport);
  try {
    return await transport.handleRequest(req);
  } finally {
    // Stateless: with JSON responses the answer is complete here.
    await server.close();
  }
}
