// The CPU a traced turn adds, measured where a clock can see microseconds (Node; workerd's clock moves
// only at I/O): recording a tool-loop turn's spans with their attributes (agent, memory load, two model
// calls, a tool and its memory write) and encoding them as the OTLP JSON body the export posts.
// Compared with bench/traces-cost.bench.ts's turn (≈ 10 ms in workerd, provider answering at once).
// Run: npx tsx bench/traces-record.ts
import { encodeSpans } from "../src/core/otlp.ts";
import { TurnTrace } from "../src/core/trace.ts";

const ROUNDS = 20_000;

function turn(): string {
  const trace = new TurnTrace(false);
  const agent = trace.child("invoke_agent memory-assistant", "internal", {
    "gen_ai.operation.name": "invoke_agent",
    "gen_ai.agent.name": "memory-assistant",
    "gen_ai.conversation.id": "th-1234567890ab",
    "edgeweave.tenant.id": "t-1234567890ab",
  });
  agent.child("search_memory", "internal", { "gen_ai.operation.name": "search_memory", "gen_ai.memory.store.id": "edgeweave.context" }).end({
    "gen_ai.memory.record.count": 12,
    "edgeweave.memory.facts": 10,
    "edgeweave.memory.recalled": 2,
    "edgeweave.memory.scopes": ["session:th-1", "organization:acme"],
  });
  const model = (finish: string) =>
    agent
      .child("chat gpt-4o-mini", "client", {
        "gen_ai.operation.name": "chat",
        "gen_ai.conversation.id": "th-1234567890ab",
        "edgeweave.route.model": "gpt-4o-mini",
        "edgeweave.route.reason": "cheapest",
        "edgeweave.route.candidates": ["gpt-4o-mini", "gpt-4o"],
      })
      .end({
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
        "gen_ai.response.finish_reasons": [finish],
        "gen_ai.usage.input_tokens": 1200,
        "gen_ai.usage.output_tokens": 40,
        "edgeweave.cost_usd": 0.00018,
        "edgeweave.failover.attempts": ["gpt-4o-mini ok"],
      });
  model("tool_calls");
  const tool = agent.child("execute_tool remember", "internal", {
    "gen_ai.operation.name": "execute_tool",
    "gen_ai.tool.name": "remember",
    "gen_ai.tool.call.id": "call_1",
  });
  tool
    .child("upsert_memory", "client", {
      "gen_ai.operation.name": "upsert_memory",
      "gen_ai.memory.store.id": "organization:acme",
      "gen_ai.memory.record.count": 1,
    })
    .end({ "gen_ai.memory.record.id": "f-1" });
  tool.end();
  model("stop");
  agent.end({ "gen_ai.usage.input_tokens": 2400, "gen_ai.usage.output_tokens": 80 });
  return JSON.stringify(encodeSpans(trace.spans));
}

let bytes = 0;
for (let i = 0; i < 2000; i++) bytes = turn().length;
const t0 = performance.now();
for (let i = 0; i < ROUNDS; i++) turn();
const us = ((performance.now() - t0) / ROUNDS) * 1000;
console.log(`BENCH traces-record: 7 spans recorded and encoded per turn in ${us.toFixed(1)} µs (${bytes} bytes of OTLP JSON)`);
