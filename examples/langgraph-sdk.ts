/**
 * edgeweave from LangGraph's own SDK: a thread, then a streamed run of the `assistant` agent
 * (LangGraph's server API, under /v1/agent-protocol; docs/guides/langgraph-sdk.md).
 *
 *   npm start                                    # in another terminal
 *   EDGEWEAVE_KEY=<tenant key> npx tsx examples/langgraph-sdk.ts
 */
import { Client } from "@langchain/langgraph-sdk";

const client = new Client({ apiUrl: `${process.env.EDGEWEAVE_URL ?? "http://127.0.0.1:8787"}/v1/agent-protocol`, apiKey: process.env.EDGEWEAVE_KEY });
const thread = await client.threads.create();
for await (const part of client.runs.stream(thread.thread_id, "assistant", {
  input: { messages: [{ type: "human", content: "Hello" }] },
  streamMode: ["messages-tuple", "values"],
}))
  console.log(part.event, part.data);

// The same thread, read back: its messages in LangChain's shape.
const state = await client.threads.getState(thread.thread_id);
console.log(state.values);
