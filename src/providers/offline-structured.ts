/**
 * What makes the offline echo model a faithful stand-in for structured output and
 * tool calling: a JSON value valid against a JSON Schema (built from its types), and
 * the choice of a tool from the user's words.
 */
type Schema = Record<string, unknown>;

const isObj = (v: unknown): v is Schema => typeof v === "object" && v !== null && !Array.isArray(v);

function resolveRef(ref: string, root: Schema): Schema {
  const m = /^#\/(\$defs|definitions)\/(.+)$/.exec(ref);
  const defs = m ? root[m[1]!] : undefined;
  const target = isObj(defs) ? defs[decodeURIComponent(m![2]!)] : undefined;
  return isObj(target) ? target : {};
}

function sampleString(s: Schema, label: string): string {
  const format = s.format;
  let v =
    format === "date-time"
      ? "2025-01-01T00:00:00Z"
      : format === "date"
        ? "2025-01-01"
        : format === "time"
          ? "00:00:00"
          : format === "email"
            ? "offline@example.com"
            : format === "uri" || format === "url"
              ? "https://example.com/"
              : format === "uuid"
                ? "00000000-0000-4000-8000-000000000000"
                : label;
  const min = typeof s.minLength === "number" ? s.minLength : 0;
  const max = typeof s.maxLength === "number" ? s.maxLength : Infinity;
  if (v.length < min) v = v.padEnd(min, ".");
  return v.slice(0, max);
}

/** A bound of a number schema: draft 2020-12 writes `exclusiveMinimum: 3`, draft 4 `minimum: 3, exclusiveMinimum: true`. */
function bound(s: Schema, side: "Minimum" | "Maximum"): { at: number; strict: boolean } | undefined {
  const inclusive = s[side === "Minimum" ? "minimum" : "maximum"];
  const exclusive = s[`exclusive${side}`];
  if (typeof exclusive === "number") return { at: exclusive, strict: true };
  if (typeof inclusive === "number") return { at: inclusive, strict: exclusive === true };
  return undefined;
}

/**
 * A plausible number inside the bounds: 1 when allowed, else the allowed value nearest to it
 * (the bound itself, a step inside a strict one, or the middle of a narrow open range), on a
 * multiple of `multipleOf`. Not the bound as such: zod's `.int()` bounds are ±(2^53 − 1).
 */
function sampleNumber(s: Schema, integer: boolean): number {
  const lo = bound(s, "Minimum");
  const hi = bound(s, "Maximum");
  const step = typeof s.multipleOf === "number" && s.multipleOf > 0 ? s.multipleOf : integer ? 1 : 0;
  const fits = (v: number) => (!lo || (lo.strict ? v > lo.at : v >= lo.at)) && (!hi || (hi.strict ? v < hi.at : v <= hi.at));
  const onStep = (v: number, round: (x: number) => number) => (step ? Number((round(v / step) * step).toPrecision(12)) : v);
  let v = 1;
  if (lo && !fits(v) && v <= lo.at) v = lo.strict ? (step ? lo.at + step : hi ? (lo.at + Math.min(hi.at, lo.at + 2)) / 2 : lo.at + 1) : lo.at;
  else if (hi && !fits(v) && v >= hi.at) v = hi.strict ? (step ? hi.at - step : lo ? (hi.at + Math.max(lo.at, hi.at - 2)) / 2 : hi.at - 1) : hi.at;
  // Onto the step: of the two multiples around it, the allowed one nearer to 1.
  const around = [onStep(v, Math.ceil), onStep(v, Math.floor)].sort((x, y) => Math.abs(x - 1) - Math.abs(y - 1));
  return around.find(fits) ?? around[0]!;
}

/**
 * A value valid against `schema`: const/enum first value, the first anyOf/oneOf branch,
 * every property of an object (required or not), minItems items of an array, strings
 * labelled with `label` (the property name) within their length bounds and formats.
 */
export function sampleFromSchema(schema: unknown, label = "offline", root: Schema = isObj(schema) ? schema : {}, depth = 0): unknown {
  if (!isObj(schema) || depth > 12) return label;
  if (typeof schema.$ref === "string") return sampleFromSchema(resolveRef(schema.$ref, root), label, root, depth + 1);
  if ("const" in schema) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  for (const key of ["anyOf", "oneOf"] as const) {
    const branches = schema[key];
    if (Array.isArray(branches) && branches.length > 0) {
      const nonNull = branches.find((b) => !(isObj(b) && b.type === "null")) ?? branches[0];
      return sampleFromSchema(nonNull, label, root, depth + 1);
    }
  }
  if (Array.isArray(schema.allOf) && schema.allOf.length > 0) {
    const merged: Schema = {};
    for (const part of schema.allOf)
      if (isObj(part))
        Object.assign(merged, part, {
          properties: { ...(isObj(merged.properties) ? merged.properties : {}), ...(isObj(part.properties) ? part.properties : {}) },
        });
    return sampleFromSchema(merged, label, root, depth + 1);
  }
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  const type = types.find((t) => t !== "null") ?? (isObj(schema.properties) ? "object" : types[0]);
  switch (type) {
    case "object": {
      const out: Record<string, unknown> = {};
      const props = isObj(schema.properties) ? schema.properties : {};
      for (const [name, sub] of Object.entries(props)) out[name] = sampleFromSchema(sub, name, root, depth + 1);
      return out;
    }
    case "array": {
      const n = typeof schema.minItems === "number" ? schema.minItems : 1;
      const max = typeof schema.maxItems === "number" ? schema.maxItems : n;
      return Array.from({ length: Math.min(Math.max(n, 1), max) }, () => sampleFromSchema(schema.items, label, root, depth + 1));
    }
    case "string":
      return sampleString(schema, label);
    case "integer":
      return sampleNumber(schema, true);
    case "number":
      return sampleNumber(schema, false);
    case "boolean":
      return true;
    case "null":
      return null;
    default:
      return label;
  }
}

const STOP = new Set([
  "the",
  "and",
  "for",
  "with",
  "that",
  "this",
  "from",
  "into",
  "your",
  "about",
  "when",
  "what",
  "which",
  "will",
  "returns",
  "return",
  "given",
  "using",
  "used",
  "tool",
  "function",
  "call",
  "get",
  "gets",
  "value",
  "values",
]);
const words = (text: string) => text.toLowerCase().match(/[a-z0-9]+/g) ?? [];

export type OfflineTool = { name: string; description?: string | null };

// A demo model must not fire a client's tools on its own (Claude Code's shell among them): only a plain ask.
const ASK = /\b(use|call|invoke|run)\b/i;
const SAYS_TOOL = /\btools?\b/i;

/**
 * The tool the user's text plainly asks for, or none: an ask ("use", "call", "invoke", "run") with the
 * tool's name (`get_weather`, "get weather"), or with the word "tool" and the tool whose description
 * shares the most key words (4+ letters, not common ones) with the text — the only tool when none does.
 */
export function pickTool<T extends OfflineTool>(text: string, tools: readonly T[]): T | undefined {
  if (!ASK.test(text)) return undefined;
  const lower = text.toLowerCase();
  const said = new Set(words(text));
  const named = tools.find((t) => {
    const n = t.name.toLowerCase();
    return (
      new RegExp(`(^|[^a-z0-9_])${n.replace(/[^a-z0-9_]/g, "\\$&")}($|[^a-z0-9_])`).test(lower) || (n.includes("_") && lower.includes(n.replaceAll("_", " ")))
    );
  });
  if (named) return named;
  if (!SAYS_TOOL.test(text)) return undefined;
  let best: T | undefined;
  let bestHits = 0;
  for (const t of tools) {
    const keys = new Set(words(t.description ?? "").filter((w) => w.length >= 4 && !STOP.has(w)));
    let hits = 0;
    for (const k of keys) if (said.has(k) || said.has(`${k}s`) || (k.endsWith("s") && said.has(k.slice(0, -1)))) hits++;
    if (hits > bestHits) {
      best = t;
      bestHits = hits;
    }
  }
  return best ?? (tools.length === 1 ? tools[0] : undefined);
}

/** What the text offers as arguments: its numbers, and its quoted phrases then capitalised names, in order. */
function valuesIn(text: string, skip: ReadonlySet<string>): { numbers: number[]; strings: string[] } {
  const numbers = [...text.matchAll(/(?<![\w.])-?\d+(?:\.\d+)?(?![\w.])/g)].map((m) => Number(m[0]));
  const quoted = [...text.matchAll(/"([^"]+)"|`([^`]+)`|'([^']+)'/g)].map((m) => m[1] ?? m[2] ?? m[3] ?? "");
  const unquoted = text.replace(/"[^"]*"|`[^`]*`|'[^']*'/g, " ");
  // A capitalised run after the first word ("weather in New York"), not a tool's name nor "I".
  const names = [...unquoted.matchAll(/(?<=\S\s+)[A-Z][\p{L}-]*(?:\s+[A-Z][\p{L}-]*)*/gu)]
    .map((m) => m[0])
    .filter((n) => n !== "I" && !skip.has(n.toLowerCase()));
  return { numbers, strings: [...quoted, ...names] };
}

/** The schema's one non-null type, following a `$ref` and the first anyOf/oneOf branch. */
function typed(schema: unknown, root: Schema, depth = 0): Schema {
  if (!isObj(schema) || depth > 12) return {};
  if (typeof schema.$ref === "string") return typed(resolveRef(schema.$ref, root), root, depth + 1);
  for (const key of ["anyOf", "oneOf"] as const) {
    const branches = schema[key];
    if (Array.isArray(branches) && branches.length > 0) return typed(branches.find((b) => !(isObj(b) && b.type === "null")) ?? branches[0], root, depth + 1);
  }
  return schema;
}

const typeOf = (s: Schema): unknown => (Array.isArray(s.type) ? s.type.find((t) => t !== "null") : s.type);

/**
 * A tool call's arguments read from the user's text: numbers said fill number properties in order
 * ("add 2 and 3" → `{a: 2, b: 3}`), quoted phrases then capitalised names fill free-text strings (a city).
 * What the text does not give is left out unless required; a required one gets a plain value (a string
 * the user's text, a boolean false — a flag is never switched on for the user, e.g. a sandbox off).
 */
export function toolArguments(schema: unknown, text: string, toolNames: readonly string[] = []): Record<string, unknown> {
  const root = isObj(schema) ? schema : {};
  const props = isObj(root.properties) ? root.properties : {};
  const required = new Set(Array.isArray(root.required) ? root.required.filter((r): r is string => typeof r === "string") : []);
  const { numbers, strings } = valuesIn(text, new Set(toolNames.map((n) => n.toLowerCase())));
  const out: Record<string, unknown> = {};
  const order = [...Object.keys(props).filter((k) => required.has(k)), ...Object.keys(props).filter((k) => !required.has(k))];
  for (const name of order) {
    const sub = typed(props[name], root);
    const type = typeOf(sub);
    const needed = required.has(name);
    const fixed = "const" in sub || (Array.isArray(sub.enum) && sub.enum.length > 0);
    const given = namedValue(text, name);
    if (given !== undefined && type === "string" && !fixed) {
      // `kind "preference"`: the property named with its value takes it, and it fills nothing else.
      out[name] = sampleString(sub, given);
      const at = strings.indexOf(given);
      if (at >= 0) strings.splice(at, 1);
    } else if ((type === "number" || type === "integer") && !fixed) {
      const i = numbers.findIndex((n) => (type === "number" || Number.isInteger(n)) && withinBounds(sub, n));
      if (i >= 0) out[name] = numbers.splice(i, 1)[0];
      else if (needed) out[name] = sampleNumber(sub, type === "integer");
    } else if (type === "string" && !fixed && sub.format === undefined && strings.length > 0) {
      out[name] = sampleString(sub, strings.shift()!);
    } else if (needed) {
      out[name] =
        type === "boolean" ? false : type === "string" && !fixed && sub.format === undefined ? sampleString(sub, text) : sampleFromSchema(sub, name, root);
    }
  }
  return out;
}

/** A quoted value said right after a property's name: `kind "preference"`, `text: 'I prefer tea'`. */
function namedValue(text: string, name: string): string | undefined {
  const m = new RegExp(`(?:^|[^\\w])${name.replace(/[^\w]/g, "\\$&")}\\s*[:=]?\\s*(?:"([^"]+)"|\`([^\`]+)\`|'([^']+)')`, "i").exec(text);
  return m ? (m[1] ?? m[2] ?? m[3]) : undefined;
}

function withinBounds(s: Schema, n: number): boolean {
  const lo = bound(s, "Minimum");
  const hi = bound(s, "Maximum");
  const step = typeof s.multipleOf === "number" && s.multipleOf > 0 ? s.multipleOf : 0;
  return (
    (!lo || (lo.strict ? n > lo.at : n >= lo.at)) &&
    (!hi || (hi.strict ? n < hi.at : n <= hi.at)) &&
    (!step || Number.isInteger(Number((n / step).toPrecision(12))))
  );
}

/** The json_schema name of edgeweave's own fact extraction (src/tasks/extract-facts.ts), which the offline model answers from the text. */
export const FACT_EXTRACTION_FORMAT = "edgeweave_fact_extraction";

/** The extraction format for these kinds: `{facts: [{key, kind, text}]}`. */
export function factExtractionFormat(kinds: readonly string[]) {
  const fact = {
    type: "object",
    properties: { key: { type: "string" }, kind: { type: "string", enum: [...kinds] }, text: { type: "string" } },
    required: ["key", "kind", "text"],
    additionalProperties: false,
  };
  const schema = { type: "object", properties: { facts: { type: "array", items: fact } }, required: ["facts"], additionalProperties: false };
  return { type: "json_schema", json_schema: { name: FACT_EXTRACTION_FORMAT, strict: true, schema } } as const;
}

const FIRST_PERSON = /^(?:i|i'm|i am|my)\b/i;
const PREFERENCE = /\b(prefer|prefers|like|likes|love|loves|hate|hates|drink|drinks|favou?rite)\b/i;

/**
 * What the offline model "extracts" from a transcript: each thing the user said of themselves ("I live in
 * Lisbon", "my dog is Rex"), as said; a liking is a `preference` when that kind is asked for. Keyed by its
 * first words, so saying it again replaces it. A stand-in, not understanding: it shows the task working.
 */
export function offlineFacts(transcript: string, kinds: readonly string[]): { key: string; kind: string; text: string }[] {
  const said = transcript
    .split("\n")
    .filter((l) => l.startsWith("user: "))
    .flatMap((l) => l.slice("user: ".length).split(/(?<=[.!])\s+|[;,]?\s+and\s+(?=(?:i|my)\b)/i))
    .map((x) => x.trim().replace(/[.!]+$/, ""))
    .filter((x) => FIRST_PERSON.test(x) && !x.includes("?") && x.split(/\s+/).length >= 3);
  const facts = new Map<string, { key: string; kind: string; text: string }>();
  for (const text of said) {
    const key = words(text.replace(FIRST_PERSON, "")).slice(0, 3).join("-");
    const kind = PREFERENCE.test(text) && kinds.includes("preference") ? "preference" : kinds[0];
    if (key !== "" && kind !== undefined) facts.set(key, { key, kind, text: `${text.slice(0, 900)}.` });
  }
  return [...facts.values()].slice(0, 20);
}

/** The JSON text for a response_format ({type:"json_object"} or {type:"json_schema", json_schema:{schema}}), or undefined for text. */
export function structuredContent(responseFormat: unknown, echo: string): string | undefined {
  if (!isObj(responseFormat)) return undefined;
  if (responseFormat.type === "json_object") return JSON.stringify({ echo });
  if (responseFormat.type === "json_schema" && isObj(responseFormat.json_schema)) {
    const { name, schema } = responseFormat.json_schema;
    if (name === FACT_EXTRACTION_FORMAT) return JSON.stringify({ facts: offlineFacts(echo, extractionKinds(schema)) });
    return JSON.stringify(sampleFromSchema(schema, echo));
  }
  return undefined;
}

/** The kinds an extraction schema allows (its facts' kind enum). */
function extractionKinds(schema: unknown): string[] {
  const facts = isObj(schema) && isObj(schema.properties) ? schema.properties.facts : undefined;
  const item = isObj(facts) && isObj(facts.items) ? facts.items : undefined;
  const kind = item && isObj(item.properties) ? item.properties.kind : undefined;
  return isObj(kind) && Array.isArray(kind.enum) ? kind.enum.filter((k): k is string => typeof k === "string") : [];
}
