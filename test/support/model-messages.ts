import type { ModelRequest, Runtime } from "../../src/pipeline/middleware/types";
import type { Message } from "../../src/thread/message";

/** The messages sent to the provider: the system prompt first, then the conversation. */
export function modelMessages(request: ModelRequest, runtime: Pick<Runtime, "now">): Message[] {
  if (request.system === null) return request.messages;
  return [{ id: "system-prompt", role: "system", content: request.system, created_at: runtime.now() }, ...request.messages];
}
