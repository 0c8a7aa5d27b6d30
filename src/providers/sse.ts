/** One Server-Sent Event: the `event:` name (if any) and the joined `data:` lines. */
export type SseEvent = { event?: string; data: string };

/** Splits a byte stream into lines (LF, CRLF or CR), decoding UTF-8 across chunk boundaries. */
export async function* lines(chunks: AsyncIterable<Uint8Array | string>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffer = "";
  for await (const chunk of chunks) {
    buffer += typeof chunk === "string" ? chunk : decoder.decode(chunk, { stream: true });
    let start = 0;
    for (let i = 0; i < buffer.length; i++) {
      const ch = buffer[i];
      if (ch !== "\n" && ch !== "\r") continue;
      // A CR at the very end may be the first half of CRLF: wait for the next chunk.
      if (ch === "\r" && i === buffer.length - 1) break;
      yield buffer.slice(start, i);
      if (ch === "\r" && buffer[i + 1] === "\n") i++;
      start = i + 1;
    }
    buffer = buffer.slice(start);
  }
  buffer += decoder.decode();
  if (buffer.endsWith("\r")) buffer = buffer.slice(0, -1);
  if (buffer.length > 0) yield buffer;
}

/** Parses an SSE stream (WHATWG rules for `event`, `data`, comments; `id`/`retry` are ignored). */
export async function* parseSse(chunks: AsyncIterable<Uint8Array | string>): AsyncGenerator<SseEvent> {
  let event: string | undefined;
  let data: string[] = [];
  for await (const line of lines(chunks)) {
    if (line === "") {
      if (data.length > 0) yield event === undefined ? { data: data.join("\n") } : { event, data: data.join("\n") };
      event = undefined;
      data = [];
      continue;
    }
    if (line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") data.push(value);
    else if (field === "event") event = value;
  }
  // An event not terminated by a blank line is still dispatched: completion is judged by the adapters' markers.
  if (data.length > 0) yield event === undefined ? { data: data.join("\n") } : { event, data: data.join("\n") };
}
