/**
 * edgeweave from the Vercel AI SDK: the default `openai(model)` provider speaks the Responses API.
 *
 *   npm start                                    # in another terminal
 *   EDGEWEAVE_KEY=<tenant key> npx tsx examples/ai-sdk.ts
 */
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, jsonSchema, stepCountIs, streamText, tool } from "ai";

const openai = createOpenAI({ baseURL: `${process.env.EDGEWEAVE_URL ?? "http://127.0.0.1:8787"}/v1`, apiKey: process.env.EDGEWEAVE_KEY ?? "" });

const { text } = await generateText({ model: openai("auto"), prompt: "Say hello in five words." });
console.log(text);

const stream = streamText({ model: openai("auto"), prompt: "Count to five." });
for await (const part of stream.textStream) process.stdout.write(part);
console.log();

// A tool loop: the SDK runs the tool, edgeweave routes the model calls (the offline model calls
// a tool whose name or description words appear in the prompt).
const withTools = await generateText({
  model: openai("auto"),
  prompt: "What is the weather forecast in Paris?",
  stopWhen: stepCountIs(3),
  tools: {
    weather: tool({
      description: "Weather forecast for a city",
      inputSchema: jsonSchema<{ city: string }>({ type: "object", properties: { city: { type: "string" } }, required: ["city"] }),
      execute: async ({ city }) => ({ city, sky: "sunny" }),
    }),
  },
});
console.log(withTools.text);
