import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "@hono/zod-openapi";
import { offlineReply } from "../../src/providers/offline";
import { pickTool, sampleFromSchema } from "../../src/providers/offline-structured";
import { fakeOpenAI } from "../support/fake-openai";
import { openaiClient, tenantForRuns } from "../support/runs";

const tenant = tenantForRuns();
const user = (content: string) => ({ role: "user" as const, content });

const person = {
  type: "object",
  properties: {
    name: { type: "string", minLength: 2 },
    age: { type: "integer", minimum: 18, maximum: 99 },
    email: { type: "string", format: "email" },
    tags: { type: "array", items: { type: "string", enum: ["a", "b"] }, minItems: 2 },
    role: { anyOf: [{ type: "null" }, { $ref: "#/$defs/role" }] },
    score: { type: ["number", "null"], exclusiveMinimum: 0 },
  },
  required: ["name", "age", "email", "tags", "role", "score"],
  additionalProperties: false,
  $defs: { role: { type: "string", enum: ["admin", "member"] } },
};

describe("the offline echo model as a stand-in for structured output and tools", () => {
  it("answers JSON valid against a json_schema response_format", () => {
    const r = offlineReply({
      model: "offline-echo",
      messages: [user("Who is Ada?")],
      response_format: { type: "json_schema", json_schema: { name: "person", schema: person } },
    });
    const value = JSON.parse(r.content!) as unknown;
    expect(z.fromJSONSchema(person as never).safeParse(value).success).toBe(true);
  });

  it("answers a JSON object for json_object", () => {
    const r = offlineReply({ model: "offline-echo", messages: [user("hi")], response_format: { type: "json_object" } });
    expect(JSON.parse(r.content!)).toEqual({ echo: "hi" });
  });

  it("property: sampled values satisfy random flat object schemas", () => {
    const prop = fc.oneof(
      fc.record({ type: fc.constant("string"), minLength: fc.integer({ min: 0, max: 20 }) }),
      fc.record({ type: fc.constant("integer"), minimum: fc.integer({ min: -50, max: 50 }) }),
      fc.record({ type: fc.constant("number"), maximum: fc.integer({ min: -50, max: 50 }) }),
      fc.record({ type: fc.constant("boolean") }),
      fc.record({ enum: fc.uniqueArray(fc.string({ minLength: 1, maxLength: 5 }), { minLength: 1, maxLength: 3 }) }),
      fc.record({ type: fc.constant("array"), items: fc.constant({ type: "integer" }), minItems: fc.integer({ min: 0, max: 3 }) }),
    );
    fc.assert(
      fc.property(
        fc.dictionary(
          fc.string({ minLength: 1, maxLength: 8 }).filter((k) => k !== "__proto__"),
          prop,
          { maxKeys: 6 },
        ),
        (props) => {
          const schema = { type: "object", properties: props, required: Object.keys(props) };
          return z.fromJSONSchema(schema as never).safeParse(sampleFromSchema(schema)).success;
        },
      ),
      { seed: 7, numRuns: 200 },
    );
  });

  it("calls the tool the user asks for by name or describes as a tool, with arguments valid against its parameters", () => {
    const weather = {
      type: "function" as const,
      function: {
        name: "get_weather",
        description: "Current weather forecast for a city",
        parameters: { type: "object", properties: { city: { type: "string" }, days: { type: "integer", minimum: 1 } }, required: ["city", "days"] },
      },
    };
    const stock = {
      type: "function" as const,
      function: {
        name: "stock_price",
        description: "Latest stock quote for a ticker symbol",
        parameters: { type: "object", properties: { ticker: { type: "string" } }, required: ["ticker"] },
      },
    };
    const tools = [weather, stock];
    const named = offlineReply({ model: "offline-echo", messages: [user("please use get_weather")], tools });
    expect(named.tool_call?.name).toBe("get_weather");
    expect(z.fromJSONSchema(weather.function.parameters as never).safeParse(JSON.parse(named.tool_call!.arguments)).success).toBe(true);
    expect(offlineReply({ model: "offline-echo", messages: [user("Use the forecast tool for Paris")], tools }).tool_call?.name).toBe("get_weather");
    expect(offlineReply({ model: "offline-echo", messages: [user("call the tool for a quote for ACME")], tools }).tool_call?.name).toBe("stock_price");
    // Described but not asked for: a question is answered, not turned into a call.
    expect(offlineReply({ model: "offline-echo", messages: [user("What's the forecast in Paris?")], tools }).tool_call).toBeUndefined();
    expect(offlineReply({ model: "offline-echo", messages: [user("hello there")], tools }).tool_call).toBeUndefined();
    expect(offlineReply({ model: "offline-echo", messages: [user("forecast")], tools, tool_choice: "none" }).tool_call).toBeUndefined();
    expect(
      offlineReply({ model: "offline-echo", messages: [user("hello")], tools, tool_choice: { type: "function", function: { name: "stock_price" } } }).tool_call
        ?.name,
    ).toBe("stock_price");
    expect(
      pickTool(
        "call stock_price now",
        tools.map((t) => ({ name: t.function.name, description: t.function.description })),
      )?.name,
    ).toBe("stock_price");
  });

  // Issue 36.2: through Claude Code it called Bash on its own, `{"command":"command",…,"dangerouslyDisableSandbox":true}`.
  it("never calls a client's tool unasked, and reads the arguments from the text, switching no flag on", () => {
    const fn = (name: string, description: string, properties: Record<string, unknown>, required: string[]) => ({
      type: "function" as const,
      function: { name, description, parameters: { type: "object", properties, required } },
    });
    const shell = {
      command: { type: "string" },
      timeout: { type: "number", maximum: 600000 },
      description: { type: "string" },
      run_in_background: { type: "boolean" },
      dangerouslyDisableSandbox: { type: "boolean" },
    };
    const bash = fn("Bash", "Executes a bash command in a shell, e.g. to list the files in a directory", shell, ["command"]);
    const add = fn("add", "Adds two numbers", { a: { type: "number" }, b: { type: "number" } }, ["a", "b"]);
    const weather = fn("get_weather", "Current weather for a city", { city: { type: "string" }, unit: { enum: ["c", "f"] } }, ["city"]);
    const tools = [bash, add, weather];
    const reply = (text: string) => offlineReply({ model: "offline-echo", messages: [user(text)], tools }).tool_call;
    expect(reply("Which files are in this directory?")).toBeUndefined();
    expect(reply("First question: reply with one word.")).toBeUndefined();
    const args = (text: string) => JSON.parse(reply(text)!.arguments) as Record<string, unknown>;
    expect(args("Use Bash to run `ls -la`")).toEqual({ command: "ls -la" });
    expect(args("please use the add tool to add 2 and 3")).toEqual({ a: 2, b: 3 });
    expect(args("Use get_weather for New York")).toEqual({ city: "New York" });
    const note = fn("remember", "Store a fact", { scope: { type: "string" }, kind: { type: "string" }, text: { type: "string" } }, ["kind", "text"]);
    const remembered = offlineReply({ model: "offline-echo", messages: [user('use remember with kind "preference" and text "I prefer tea"')], tools: [note] });
    expect(JSON.parse(remembered.tool_call!.arguments)).toEqual({ kind: "preference", text: "I prefer tea" });
    // A required value the text does not give is a plain one: a flag stays off.
    const flag = fn("Bash", "", shell, ["command", "dangerouslyDisableSandbox"]);
    const forced = offlineReply({ model: "offline-echo", messages: [user("hello")], tools: [flag], tool_choice: "required" }).tool_call!;
    expect(JSON.parse(forced.arguments)).toEqual({ command: "hello", dangerouslyDisableSandbox: false });
  });

  // Issue 24.6: zod's .int() emits minimum -2^53+1; a sample took it as is.
  it("numbers are plausible values inside the schema's bounds (zod's .int() range, exclusive bounds, multipleOf, enums, nested)", () => {
    const Order = z.object({
      count: z.int(),
      age: z.int().min(18).max(99),
      ratio: z.number().gt(0).lt(1),
      tiny: z.number().gt(0).lt(0.01),
      step: z.int().multipleOf(5).min(12),
      below: z.int().max(-5),
      byte: z.int().min(0).max(255),
      positive: z.int().positive(),
      level: z.enum(["low", "high"]),
      lines: z.array(z.object({ qty: z.int().positive(), price: z.number().nonnegative().multipleOf(0.25), note: z.string().nullable() })).min(2),
    });
    const value = sampleFromSchema(z.toJSONSchema(Order)) as z.infer<typeof Order>;
    expect(Order.safeParse(value).success).toBe(true);
    expect(value).toMatchObject({ count: 1, age: 18, step: 15, below: -5, byte: 1, positive: 1, level: "low" });
    expect(value.lines.map((l) => l.qty)).toEqual([1, 1]);
    for (const n of [value.ratio, value.tiny]) expect(n > 0 && n < 1).toBe(true);
    expect(value.tiny).toBeLessThan(0.01);
    // Draft-4 style boolean exclusive bounds (some schema generators still write them).
    const draft4 = { type: "object", properties: { n: { type: "integer", minimum: 0, exclusiveMinimum: true, maximum: 1, exclusiveMaximum: false } } };
    expect(sampleFromSchema(draft4)).toEqual({ n: 1 });
    expect(sampleFromSchema({ type: "integer", minimum: 10, exclusiveMinimum: true })).toBe(11);
  });

  it("property: sampled numbers satisfy random bounds and stay small when the bounds allow it", () => {
    const bound = fc.option(fc.integer({ min: -1000, max: 1000 }), { nil: undefined });
    fc.assert(
      fc.property(
        fc.constantFrom("integer", "number"),
        bound,
        bound,
        fc.boolean(),
        fc.boolean(),
        fc.option(fc.constantFrom(2, 3, 5, 0.5, 0.25), { nil: undefined }),
        (type, a, b, exLo, exHi, multipleOf) => {
          const [lo, hi] = a !== undefined && b !== undefined && a > b ? [b, a] : [a, b];
          const schema: Record<string, unknown> = { type };
          if (lo !== undefined) schema[exLo ? "exclusiveMinimum" : "minimum"] = lo;
          if (hi !== undefined) schema[exHi ? "exclusiveMaximum" : "maximum"] = hi;
          if (multipleOf !== undefined && (type === "number" || Number.isInteger(multipleOf))) schema.multipleOf = multipleOf;
          const parsed = z.fromJSONSchema(schema as never);
          const v = sampleFromSchema(schema) as number;
          if (parsed.safeParse(v).success) return Math.abs(v) <= Math.max(Math.abs(lo ?? 0), Math.abs(hi ?? 0), 1) + 5;
          // Invalid is right only for a schema no value satisfies (e.g. 3 < x < 4 for an integer).
          return !Array.from({ length: 4401 }, (_, i) => -1100 + i / 2).some((x) => parsed.safeParse(x).success);
        },
      ),
      { seed: 24, numRuns: 300 },
    );
  });

  it("through /v1/responses: text.format json_schema on the offline model gives parseable JSON", async () => {
    fakeOpenAI();
    const r = await openaiClient(tenant().adminKey).responses.create({
      model: "offline-echo",
      input: "Describe Ada",
      text: { format: { type: "json_schema", name: "person", schema: person, strict: true } },
    });
    expect(z.fromJSONSchema(person as never).safeParse(JSON.parse(r.output_text)).success).toBe(true);
  });
});
