import { AP, SERVED_ROUTES } from "../agent-protocol/served";
import { AppError } from "../core/errors";

/** What LangGraph's own server serves at its root, that an SDK Client pointed at edgeweave's root would ask for. */
const SERVER_API = /^\/(threads|store|assistants|runs|crons|info)(\/|$)/;
const SERVED =
  "edgeweave serves LangGraph's store API (the SDK Client's `client.store`) and a checkpointer for EdgeweaveSaver under /v1/langgraph: " +
  "POST /v1/langgraph/threads/{thread_id}/get, …/list, …/batch, …/delta-history, …/prune; DELETE /v1/langgraph/threads/{thread_id}; POST /v1/langgraph/list; " +
  "PUT/GET/DELETE /v1/langgraph/store/items, POST /v1/langgraph/store/items/search, /v1/langgraph/store/namespaces, /v1/langgraph/store/batch";

/**
 * A pointer for the LangGraph SDK's requests that match no route: a Client whose
 * `apiUrl` is the server's root, or the store's base path while it calls the server API (threads,
 * assistants, runs: under AP), and what the server API under AP does not serve.
 * `GET /v1/langgraph/threads/{id}` and `POST …/threads/search` (the SDK's `threads.get` and
 * `threads.search`) share a path with the checkpointer's DELETE: they are 404 with what exists, not
 * a 405 that suggests DELETE. Undefined: not one of these (the caller answers 404 or 405).
 */
export function langgraphPointer(method: string, path: string, allowed: readonly string[]): AppError | undefined {
  if (SERVER_API.test(path)) {
    return new AppError(
      "BEM-002",
      `No route ${path} at the root: LangGraph's server API (threads, assistants, runs) is under ${AP} — new Client({ apiUrl: "<origin>${AP}", apiKey }); its store is under /v1/langgraph — new Client({ apiUrl: "<origin>/v1/langgraph", apiKey }). ${SERVED}`,
    );
  }
  if (path.startsWith(`${AP}/`)) {
    // 404 even where the path answers other methods: the SDK's /threads/count or /assistants/count fits
    // /threads/{id}, so a 405 would name methods of a thread called "count".
    const answers = allowed.length > 0 ? ` This path answers ${allowed.join(", ")}.` : "";
    return new AppError(
      "BEM-002",
      `${method} ${path.slice(AP.length)} is not served by edgeweave's LangGraph API (under ${AP}).${answers} Served: ${SERVED_ROUTES}. The store (client.store) is under /v1/langgraph.`,
    );
  }
  if (!path.startsWith("/v1/langgraph/")) return undefined;
  const threadItself = /^\/v1\/langgraph\/threads\/[^/]+$/.test(path) && method !== "DELETE";
  if (allowed.length > 0 && !threadItself) return undefined; // a real route, another method: 405
  return new AppError(
    "BEM-002",
    `${method} ${path} is not served here: LangGraph's server API (threads, assistants, runs) is under ${AP} — new Client({ apiUrl: "<origin>${AP}", apiKey }) (edgeweave's own threads: GET /v1/threads/{thread_id}). ${SERVED}`,
  );
}
