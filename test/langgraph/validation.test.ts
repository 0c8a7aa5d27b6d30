/**
 * LangGraph's own conformance suite for checkpointers, against EdgeweaveSaver
 * talking HTTP to this Worker (workerd, real Durable Object storage and D1).
 * The package calls vitest's globals, so they are provided before it loads.
 */
import * as vitest from "vitest";
import { freshSaver } from "./support";

const { describe, it, test, expect, beforeAll, afterAll, beforeEach, afterEach } = vitest;
Object.assign(globalThis, { describe, it, test, expect, beforeAll, afterAll, beforeEach, afterEach });
const { validate, deltaChannelHistoryTests } = await import("@langchain/langgraph-checkpoint-validation");

// Not a name the suite skips tests for: every test runs (MemorySaver skips one).
const initializer = {
  checkpointerName: "@edgeweave/langgraph",
  createCheckpointer: async () => (await freshSaver()).saver,
};
validate(initializer);
deltaChannelHistoryTests(initializer);
