/**
 * A LangGraph agent whose short-term memory (checkpoints) and long-term memory (store)
 * live in edgeweave: a model node that calls a tool, LangGraph's prebuilt ToolNode, and
 * a subgraph that files what was learned into the store. The "model" is a small
 * deterministic function so the example runs offline; swap in any chat model.
 *
 *   npm start                                    # in another terminal
 *   EDGEWEAVE_KEY=<tenant admin key> npx tsx examples/langgraph-agent.ts
 *
 * It imports the package as your app would (`edgeweave/langgraph`: this repository exports its build).
 */
import { AIMessage, HumanMessage, type BaseMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { Annotation, END, MessagesAnnotation, START, StateGraph, type LangGraphRunnableConfig } from "@langchain/langgraph";
import { ToolNode, toolsCondition } from "@langchain/langgraph/prebuilt";
import { z } from "zod";
import { EdgeweaveSaver, EdgeweaveStore } from "edgeweave/langgraph";

const baseUrl = process.env.EDGEWEAVE_URL ?? "http://127.0.0.1:8787";
const apiKey = process.env.EDGEWEAVE_KEY;
if (!apiKey) throw new Error("Set EDGEWEAVE_KEY to a tenant key (see docs/getting-started.md)");

const checkpointer = new EdgeweaveSaver({ baseUrl, apiKey });
const store = new EdgeweaveStore({ baseUrl, apiKey });

const weather = tool(async ({ city }: { city: string }) => `It is sunny in ${city}.`, {
  name: "get_weather",
  description: "The weather in a city",
  schema: z.object({ city: z.string() }),
});

/** Stands in for a chat model: asks for the weather once, then answers from the tool result. */
function model(state: typeof MessagesAnnotation.State): { messages: BaseMessage[] } {
  const last = state.messages.at(-1);
  if (last && last.getType() === "tool") return { messages: [new AIMessage(`Here you go: ${String(last.content)}`)] };
  const city = String(last?.content ?? "").match(/in (\w+)/)?.[1] ?? "Paris";
  return { messages: [new AIMessage({ content: "", tool_calls: [{ id: `call-${Date.now()}`, name: "get_weather", args: { city } }] })] };
}

// The subgraph keeps its own checkpoints under its namespace ("remember:<task id>") in the same thread.
const Notes = Annotation.Root({ ...MessagesAnnotation.spec, filed: Annotation<number>() });
const remember = new StateGraph(Notes)
  .addNode("file", async (s: typeof Notes.State, config: LangGraphRunnableConfig) => {
    const answer = String(s.messages.at(-1)?.content ?? "");
    // ["organization", "acme"] is the memory scope organization:acme: the key's grants apply.
    await config.store?.put(["organization", "acme", "weather"], `note-${Date.now()}`, { answer });
    const notes = await config.store?.search(["organization", "acme", "weather"], { limit: 100 });
    return { filed: notes?.length ?? 0 };
  })
  .addEdge(START, "file")
  .addEdge("file", END)
  .compile();

const graph = new StateGraph(Notes)
  .addNode("model", model)
  .addNode("tools", new ToolNode([weather]))
  .addNode("remember", remember)
  .addEdge(START, "model")
  .addConditionalEdges("model", toolsCondition, { tools: "tools", [END]: "remember" })
  .addEdge("tools", "model")
  .addEdge("remember", END)
  .compile({ checkpointer, store });

const config = { configurable: { thread_id: `weather-${Date.now()}` } };
const out = await graph.invoke({ messages: [new HumanMessage("What is the weather in Lisbon?")] }, config);
console.log(out.messages.at(-1)?.content, `(${out.filed} notes filed)`);

const second = await graph.invoke({ messages: [new HumanMessage("And in Oslo?")] }, config);
console.log(second.messages.at(-1)?.content, `(${second.messages.length} messages in the thread)`);

for await (const snapshot of graph.getStateHistory(config, { limit: 5 })) {
  console.log(`step ${snapshot.metadata?.step} ${snapshot.metadata?.source} next=${snapshot.next.join(",") || "-"}`);
}
