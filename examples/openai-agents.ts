/**
 * edgeweave from the OpenAI Agents SDK (@openai/agents): agents run on the Responses API.
 *
 *   npm start                                    # in another terminal
 *   EDGEWEAVE_KEY=<tenant key> npx tsx examples/openai-agents.ts
 */
import { Agent, run, setDefaultOpenAIClient, setTracingDisabled, tool } from "@openai/agents";
import OpenAI from "openai";
import { z } from "zod";

setDefaultOpenAIClient(new OpenAI({ baseURL: `${process.env.EDGEWEAVE_URL ?? "http://127.0.0.1:8787"}/v1`, apiKey: process.env.EDGEWEAVE_KEY ?? "" }));
setTracingDisabled(true); // traces would go to api.openai.com

const hello = await run(new Agent({ name: "helper", instructions: "Be brief.", model: "auto" }), "Hello");
console.log(hello.finalOutput);

// An agent with a function tool: the SDK runs the tool, edgeweave the model calls.
const add = tool({
  name: "add",
  description: "Add two numbers",
  parameters: z.object({ a: z.number(), b: z.number() }),
  execute: async ({ a, b }) => String(a + b),
});
const agent = new Agent({ name: "calculator", instructions: "Add numbers with the add tool.", model: "auto", tools: [add] });
const result = await run(agent, "Please add 2 and 3.");
console.log(result.finalOutput);
