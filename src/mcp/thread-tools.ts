import { authorizeThread, readableThreads } from "../auth/policy";
import { AppError } from "../core/errors";
import type { ToolCaller } from "../pipeline/runtime";
import { defineTool, type ToolCallRuntime } from "../pipeline/tools/define";
import { ThreadClient } from "../thread/client";
import { messageText } from "../core/message";
import { listThreads } from "../thread/thread-list";
import { parseThreadId } from "../thread/thread-id";

/**
 * Reading threads over MCP, under the same rule as the thread routes: a key reaches thread
 * `t` iff a grant matches `session:t` (admins: every thread; members: with a grant such as
 * `session:*`, `session:support-*` or `session:<id>`).
 */

function callerOf(runtime: ToolCallRuntime): ToolCaller {
  if (!runtime.caller || runtime.caller.principal.kind === "operator") throw new AppError("BEM-143", "Thread tools need a tenant key");
  return runtime.caller;
}

export const searchThreads = defineTool({
  name: "search_threads",
  description:
    "List this tenant's threads you may read, most recently updated first; `query` keeps those whose id contains it (case-insensitive). " +
    "Matches ids only, never message text. Pass the answer's `next_before` as `before` for the next page (null on the last).",
  inputSchema: {
    type: "object",
    properties: {
      query: { type: "string", maxLength: 128 },
      limit: { type: "integer", minimum: 1, maximum: 50 },
      before: { type: "string", maxLength: 200 },
    },
  },
  handler: async (input, runtime) => {
    const caller = callerOf(runtime);
    const limit = typeof input.limit === "number" ? input.limit : 20;
    const query = typeof input.query === "string" ? input.query : "";
    const before = typeof input.before === "string" && input.before !== "" ? input.before : undefined;
    // The same query as GET /v1/threads: grants and query filter in SQL, before the LIMIT, bound to the tenant.
    const page = await listThreads(caller.env.DB, caller.principal.tenant, {
      limit,
      only: readableThreads(caller.principal),
      ...(query ? { idContains: query } : {}),
      ...(before ? { before } : {}),
    });
    return JSON.stringify({ threads: page.threads.map((t) => ({ thread_id: t.thread_id, updated_at: t.updated_at })), next_before: page.next_before });
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
    // The grant first (BEM-025 whether or not the thread exists), then existence, as GET /v1/threads/:id/state.
    authorizeThread(caller.principal, threadId, false);
    const limit = typeof input.limit === "number" ? input.limit : 50;
    const thread = new ThreadClient(caller.env, caller.principal.tenant, threadId);
    const recent = await thread.loadRecent(200_000, { maxMessages: limit });
    // Only an empty answer needs the existence check (a thread may exist with no messages).
    if (recent.messages.length === 0 && !(await thread.exists())) throw new AppError("BEM-036", `No thread '${threadId}'`);
    const messages = recent.messages.map((m) => ({ id: m.id, role: m.role, content: messageText(m.content), created_at: m.created_at }));
    return JSON.stringify({ thread_id: threadId, messages });
  },
});

export const THREAD_TOOLS = [searchThreads, getThread] as const;
