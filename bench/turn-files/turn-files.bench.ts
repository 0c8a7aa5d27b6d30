import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { threadObjectName } from "../../src/thread/thread-id";
import { completionAfter, fakeOpenAI } from "../../test/support/fake-openai";
import { api } from "../../test/support/tenants";
import { tenantForRuns, uniqueThread } from "../../test/support/runs";

declare global {
  var __turnFiles: Set<string> | undefined;
}

const tenant = tenantForRuns();
const chat = (thread: string, content: string) =>
  api("/v1/chat/completions", { key: tenant().adminKey, body: { model: "gpt-4o-mini", thread_id: thread, messages: [{ role: "user", content }] } });

/** The src/ files on the call stack here (async frames included). */
const stackFiles = (): string[] => [...new Set([...(new Error().stack ?? "").matchAll(/\/(src\/[\w/.-]+\.ts)/g)].map((m) => m[1]!))];

/** Calls `method` of `proto` through a wrapper that notes the src/ files on the stack at every call; returns the undo. */
function noteStacks(proto: object, method: string, into: Set<string>): () => void {
  const original = Reflect.get(proto, method) as (...a: unknown[]) => unknown;
  Reflect.set(proto, method, function (this: unknown, ...args: unknown[]) {
    for (const f of stackFiles()) into.add(f);
    return original.apply(this, args);
  });
  return () => Reflect.set(proto, method, original);
}

const byFolder = (files: string[]) => {
  const counts = new Map<string, number>();
  for (const f of files) counts.set(f.split("/")[1]!, (counts.get(f.split("/")[1]!) ?? 0) + 1);
  return [...counts].map(([d, n]) => `${d} ${n}`).join(", ");
};

describe("the files a stateful chat turn passes through", () => {
  it("counts them for the second turn of a thread (the first made the thread; every isolate-wide cache is warm)", async () => {
    Error.stackTraceLimit = 200;
    const thread = uniqueThread("walk");
    fakeOpenAI().reply("first");
    expect((await chat(thread, "hello")).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1_500)); // the first turn's bookkeeping has left
    // The storage side: every SQLite statement of the thread's object and every D1 statement, wherever made.
    const stub = env.THREADS.get(env.THREADS.idFromName(threadObjectName(tenant().tenant, thread)));
    const sqlProto = await runInDurableObject(stub, (_o, state) => Object.getPrototypeOf(state.storage.sql) as object);
    const dbProto = Object.getPrototypeOf(env.DB) as object;
    const onStacks = new Set<string>();
    const undo = [noteStacks(sqlProto, "exec", onStacks), noteStacks(dbProto, "prepare", onStacks), noteStacks(dbProto, "batch", onStacks)];
    // The provider's side: the stacks that reach the upstream call.
    const fake = fakeOpenAI().respond(
      completionAfter(async () => {
        for (const f of stackFiles()) onStacks.add(f);
      }, "second"),
    );
    globalThis.__turnFiles = new Set();
    const res = await chat(thread, "and again");
    await res.text();
    const entered = [...globalThis.__turnFiles].sort();
    globalThis.__turnFiles = undefined;
    for (const u of undo) u();
    expect(res.status).toBe(200);
    expect(fake.calls.length).toBe(1);
    const spine = [...onStacks].sort();
    console.log(`BENCH turn-files: ${entered.length} files run code to the answer (${byFolder(entered)})`);
    console.log(`BENCH turn-files: ${spine.length} files on the call stacks that reach storage and the provider (${byFolder(spine)})`);
    console.log(`on the stacks:\n${spine.join("\n")}`);
  });
});
