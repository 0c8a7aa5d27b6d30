import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseNdjson } from "../../src/providers/ndjson";
import { lines, parseSse } from "../../src/providers/sse";
import { drain } from "./helpers";

const enc = new TextEncoder();

/** Splits bytes at the given cut points, so multi-byte characters can be split too. */
async function* splitBytes(text: string, cuts: number[]): AsyncGenerator<Uint8Array> {
  const all = enc.encode(text);
  const points = [...new Set(cuts.map((c) => c % (all.length + 1)))].sort((a, b) => a - b);
  let start = 0;
  for (const p of points) {
    yield all.slice(start, p);
    start = p;
  }
  yield all.slice(start);
}

describe("line, SSE and NDJSON parsers", () => {
  it("parses SSE fields, multi-line data, comments and CRLF", async () => {
    const text = ': keep-alive\r\nevent: message_start\r\ndata: {"a":1}\r\n\r\ndata: line1\ndata: line2\n\ndata:[DONE]\n\n';
    expect(await drain(parseSse(splitBytes(text, [])))).toEqual([{ event: "message_start", data: '{"a":1}' }, { data: "line1\nline2" }, { data: "[DONE]" }]);
  });

  it("SSE parsing does not depend on how the bytes were chunked (property)", async () => {
    const payload = fc.string({ unit: fc.constantFrom("a", "é", "😀", " ", "{", "}", ":", '"'), maxLength: 20 });
    await fc.assert(
      fc.asyncProperty(
        fc.array(payload, { minLength: 1, maxLength: 6 }),
        fc.constantFrom("\n", "\r\n"),
        fc.array(fc.nat(), { maxLength: 8 }),
        async (datas, nl, cuts) => {
          const text = datas.map((d) => `data: ${d}${nl}${nl}`).join("");
          const events = await drain(parseSse(splitBytes(text, cuts)));
          expect(events).toEqual(datas.map((d) => ({ data: d })));
        },
      ),
      { numRuns: 200 },
    );
  });

  it("splits lines on LF, CRLF and CR, even when CRLF straddles chunks", async () => {
    async function* parts() {
      yield "a\r";
      yield "\nb\rc\n";
      yield "tail";
    }
    expect(await drain(lines(parts()))).toEqual(["a", "b", "c", "tail"]);
  });

  it("NDJSON yields one value per line and skips blank lines", async () => {
    const text = '{"a":1}\n\n{"b":"é"}\n';
    expect(await drain(parseNdjson(splitBytes(text, [3, 12])))).toEqual([{ a: 1 }, { b: "é" }]);
  });
});
