/**
 * LangGraph's own conformance suite for checkpointers, against EdgeweaveSaver
 * talking HTTP to this Worker (workerd, real Durable Object storage and D1).
 * The package calls vitest's globals, so they are provided before it loads.
 */
import * as vitest from "vitest";
import { freshMember, freshSaver, saverFor } from "./support";

const { describe, it, test, expect, beforeAll, afterAll, beforeEach, afterEach } = vitest;
Object.assign(globalThis, { describe, it, test, expect, beforeAll, afterAll, beforeEach, afterEach });
const { validate, specTest, deltaChannelHistoryTests } = await import("@langchain/langgraph-checkpoint-validation");

// Not a name the suite skips tests for: every test runs (MemorySaver skips one).
const initializer = {
  checkpointerName: "@edgeweave/langgraph",
  createCheckpointer: async () => (await freshSaver()).saver,
};
validate(initializer);
deltaChannelHistoryTests(initializer);

// Again with a member key (thread reach, no rewrite_thread): LangGraph's own use of a checkpointer
// is runs, and works as it does for an admin. deleteThread rewrites history, which a member may
// not do (403 BEM-022, pinned in test/langgraph/rewrites.test.ts), so its one test runs above only.
const member = {
  checkpointerName: "@edgeweave/langgraph (member key)",
  createCheckpointer: async () => saverFor((await freshMember()).key),
};
specTest(member, ["put", "putWrites", "getTuple", "list"]);
deltaChannelHistoryTests(member);
