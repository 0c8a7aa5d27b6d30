import { authorize, decide } from "../auth/policy";
import { AppError } from "../core/errors";
import { MemoryScope } from "../memory/scope";
import type { ToolCaller } from "../pipeline/runtime";
import { defineTool, type ToolCallRuntime } from "../pipeline/tools/define";
import { ThreadClient } from "../thread/client";
import { messageText } from "../core/message";
import { listThreads } from "../thread/thread-list";
import { parseThreadId } from "../thread/thread-id";

/**
 * Reading threads over MCP. A thread is the session scope `session:<id>`, so a key
 * reads it only when its grants do (admins: every thread; members: with a grant such as
 * `session:*` or `session:<id>`).
 */

function callerOf(runtime: ToolCallRuntime): ToolCaller {
  if (!runtime.caller || runtime.caller.principal.kind === "operator") throw new AppError("BEM-143", "Thread tools need a tenant key");
  return runtime.caller;
}

const MAX_SCAN_PAGES = 5;

export const searchThreads = defineTool({
  name: "search_threads",
  description: "List this tenant's threads you may read, most recently updated first; `query` keeps those whose id contains it.",
  inputSchema: {
    type: "object",
    properties: { query: { type: "string", maxLength: 128 }, limit: { type: "integer", minimum: 1, maximum: 50 } },
  },
  handler: async (input, runtime) => {
    const caller = callerOf(runtime);
    const limit = typeof input.limit === "number" ? input.limit : 20;
    const query = typeof input.query === "string" ? input.query.toLowerCase() : "";
    const found: { thread_id: string; updated_at: number }[] = [];
    let before: string | undefined;
    // Pages of the tenant's thread list, filtered by grant and query; bounded, so a query that matches little costs little.
    for (let page = 0; page < MAX_SCAN_PAGES && found.length < limit; page++) {
      const list = await listThreads(caller.env.DB, caller.principal.tenant, { limit: 100, ...(before ? { before } : {}) });
      for (const t of list.threads) {
        if (found.length >= limit) break;
        if (query && !t.thread_id.toLowerCase().includes(query)) continue;
        if (decide(caller.principal, "read_scope", { scope: MemoryScope.session(t.thread_id) }).allow)
          found.push({ thread_id: t.thread_id, updated_at: t.updated_at });
      }
      if (!list.next_before) break;
      before = list.next_before;
    }
    return JSON.stringify({ threads: found });
  },
});

export const getThread = defineTool({
  name: "get_thread",
  description: "The newest messages of a thread (role and text).",
  inputSchema: {
    type: "object",
    properties: { thread_id: { type: "string", minLength: 1, maxLength: 128 }, limit: { type: "integer", minimum: 1, maximum: 200 } },
    required: ["thread_id"],
  },
  handler: async (input, runtime) => {
    const caller = callerOf(runtime);
    const threadId = parseThreadId(String(input.thread_id));
    authorize(caller.principal, "read_scope", { scope: MemoryScope.session(threadId) });
    const limit = typeof input.limit === "number" ? input.limit : 50;
    const recent = await new ThreadClient(caller.env, caller.principal.tenant, threadId).loadRecent(200_000);
    const messages = recent.messages.slice(-limit).map((m) => ({ id: m.id, role: m.role, content: messageText(m.content), created_at: m.created_at }));
    return JSON.stringify({ thread_id: threadId, messages });
  },
});

export const THREAD_TOOLS = [searchThreads, getThread] as const;
