/**
 * edgeweave from LangChain JS (@langchain/openai): Chat Completions on a thread, the Responses
 * API (useResponsesApi), and structured output.
 *
 *   npm start                                    # in another terminal
 *   EDGEWEAVE_KEY=<tenant key> npx tsx examples/langchain.ts
 */
import { ChatOpenAI } from "@langchain/openai";
import { z } from "zod";

const configuration = { baseURL: `${process.env.EDGEWEAVE_URL ?? "http://127.0.0.1:8787"}/v1` };
const apiKey = process.env.EDGEWEAVE_KEY ?? "";

// Stateful: the thread keeps the history; resending the whole history is reconciled (stored once).
const chat = new ChatOpenAI({ model: "auto", apiKey, configuration: { ...configuration, defaultHeaders: { "X-Thread-Id": "demo-langchain" } } });
console.log((await chat.invoke("Hi, I am Ada.")).content);

const responses = new ChatOpenAI({ model: "auto", apiKey, configuration, useResponsesApi: true });
console.log((await responses.invoke("Say hello.")).content);

const Person = z.object({ name: z.string(), age: z.number().int() });
const structured = chat.withStructuredOutput(Person, { name: "person" });
console.log(await structured.invoke("Ada is 36."));
