import { lines } from "./sse";

/** Parses newline-delimited JSON; blank lines are skipped, a bad line throws (the caller maps it). */
export async function* parseNdjson(chunks: AsyncIterable<Uint8Array | string>): AsyncGenerator<unknown> {
  for await (const line of lines(chunks)) {
    if (line.trim() === "") continue;
    yield JSON.parse(line) as unknown;
  }
}
