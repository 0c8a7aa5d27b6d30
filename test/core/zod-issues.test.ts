import { z } from "zod";
import { describe, expect, it } from "vitest";
import { describeIssues } from "../../src/core/zod-issues";
import { InputItem } from "../../src/edge/responses-schemas";

describe("describeIssues: the one formatter for zod issues in error messages", () => {
  const Body = z.object({ name: z.string(), tags: z.array(z.string()).max(1), n: z.number() });
  const issues = (v: unknown) => {
    const r = Body.safeParse(v);
    if (r.success) throw new Error("expected a failure");
    return r.error.issues;
  };

  it("lists path: message joined with '; ', a root for top-level issues, at most `limit`", () => {
    const all = describeIssues(issues({ name: 1, tags: ["a"], n: "x" })).split("; ");
    expect(all.map((line) => line.split(":")[0])).toEqual(["name", "n"]);
    expect(describeIssues(issues({ name: "a", tags: [2], n: 1 }))).toMatch(/^tags\.0: /);
    expect(describeIssues(issues("nope"), { root: "(body)" })).toMatch(/^\(body\): /);
    expect(describeIssues(issues({ name: 1, tags: ["a", "b"], n: "x" }), { limit: 1 }).split("; ")).toHaveLength(1);
  });

  it("takes a prefix and a suffix per issue", () => {
    expect(describeIssues(issues({ name: "a", tags: [], n: "x" }), { prefix: "context.", suffix: " (needed by todo_list)" })).toMatch(
      /^context\.n: .+ \(needed by todo_list\)$/,
    );
  });
});

describe("describeIssues on unions: what was expected, never a bare 'Invalid input'", () => {
  const Part = z.object({ type: z.literal("text"), text: z.string() });
  const Body = z.object({ content: z.union([z.string(), z.array(Part), z.null()]), mode: z.union([z.literal("a"), z.literal("b")]).optional() });
  const describe_ = (v: unknown) => {
    const r = Body.safeParse(v);
    if (r.success) throw new Error("expected a failure");
    return describeIssues(r.error.issues, { root: "(body)" });
  };

  it("lists the branches' types and what was received", () => {
    expect(describe_({ content: 42 })).toBe("content: Invalid input: expected string, array or null, received number");
  });

  it("a missing field is required", () => {
    expect(describe_({})).toBe("content: Required: expected string, array or null");
  });

  it("literal branches are listed as values", () => {
    expect(describe_({ content: "x", mode: "c" })).toBe('mode: Invalid input: expected "a" or "b"');
  });

  it("a value whose type matched a branch reports that branch's issue, at its full path", () => {
    expect(describe_({ content: [{ type: "text", text: 5 }] })).toBe("content.0.text: Invalid input: expected string, received number");
  });
});

describe("describeIssues on unions of tagged objects (Responses input items)", () => {
  const Item = z.union([
    z.object({ type: z.literal("function_call"), call_id: z.string(), name: z.string(), arguments: z.string() }),
    z.object({ type: z.literal("function_call_output"), call_id: z.string(), output: z.string() }),
    z.object({ type: z.literal("message").optional(), role: z.enum(["user", "assistant"]), content: z.union([z.string(), z.array(z.unknown())]) }),
  ]);
  const describe_ = (v: unknown) => {
    const r = z.object({ input: z.array(Item) }).safeParse({ input: [v] });
    if (r.success) throw new Error("expected a failure");
    return describeIssues(r.error.issues);
  };

  it("reports the branch the item was meant for (its tag matched), not the first branch", () => {
    expect(describe_({ type: "message", role: "user", content: 5 })).toBe("input.0.content: Invalid input: expected string or array, received number");
    expect(describe_({ type: "function_call_output", call_id: "c1" })).toBe("input.0.output: Invalid input: expected string, received undefined");
  });

  it("an unknown tag lists the tags every branch accepts", () => {
    const Tagged = z.union([z.object({ type: z.literal("a"), x: z.string() }), z.object({ type: z.literal("b"), y: z.number() })]);
    const r = Tagged.safeParse({ type: "c" });
    expect(describeIssues(r.error!.issues)).toBe('type: Invalid input: expected "a" or "b"');
  });
});

describe("describeIssues picks the branch the input names (the Responses and Conversations input item)", () => {
  const describe_ = (item: unknown, withInput = true) => {
    const body = { items: [item] };
    const r = z.object({ items: z.array(InputItem) }).safeParse(body);
    if (r.success) throw new Error("expected a failure");
    return describeIssues(r.error.issues, withInput ? { input: body } : {});
  };

  it("a wrong role is the message's role, with the roles allowed (not the reasoning item's type)", () => {
    for (const withInput of [true, false]) {
      expect(describe_({ role: "SYSTEM" }, withInput)).toBe(
        'items.0.role: Invalid option: expected one of "user"|"assistant"|"system"|"developer"; items.0.content: Required: expected string or array',
      );
      expect(describe_({ type: "message", role: "system2", content: "x" }, withInput)).toBe(
        'items.0.role: Invalid option: expected one of "user"|"assistant"|"system"|"developer"',
      );
    }
  });

  it("an item naming no kind lists the fields that name one, with their values", () => {
    expect(describe_({})).toBe(
      'items.0: Required: expected type "function_call", "function_call_output", "reasoning" or "item_reference", or role "user", "assistant", "system" or "developer"',
    );
    expect(describe_({ content: "x" })).toMatch(/^items\.0: Required: expected type .+, or role /);
  });

  it("a typed item reports its own missing fields; an unknown type lists the types", () => {
    expect(describe_({ type: "function_call", call_id: "c" })).toBe(
      "items.0.name: Invalid input: expected string, received undefined; items.0.arguments: Invalid input: expected string, received undefined",
    );
    expect(describe_({ type: "mesage", role: "user", content: "x" })).toBe(
      'items.0.type: Invalid input: expected "function_call", "function_call_output", "reasoning", "item_reference" or "message"',
    );
  });
});
