import type { DeltaEvent } from "../providers/types";

/**
 * What of a model call's stream reaches the client: everything but the calls of the run's own server
 * tools (models.yaml `tools:`, middleware tools). The run answers those itself and calls the model
 * again; the unstreamed answer never shows them, and a streamed one that did made clients take them
 * for calls of their own (the openai SDK's stream helper kept them in the final message). A call is
 * the run's by its name, which comes with its first part; its later parts carry only its index (and
 * an Anthropic upstream's block events, their block's index).
 */
export class ClientDeltas {
  private readonly calls = new Set<number>();
  private readonly blocks = new Set<number>();

  constructor(private readonly serverTools: ReadonlySet<string>) {}

  /** The part of `ev` the client gets, or null when nothing is left of it. */
  of(ev: DeltaEvent): DeltaEvent | null {
    if (this.serverTools.size === 0) return ev;
    let out: DeltaEvent = ev;
    if (ev.tool_calls) {
      for (const t of ev.tool_calls) if (t.name !== undefined && this.serverTools.has(t.name)) this.calls.add(t.index);
      const kept = ev.tool_calls.filter((t) => !this.calls.has(t.index));
      if (kept.length < ev.tool_calls.length) {
        const { tool_calls: _run, ...rest } = out;
        out = kept.length > 0 ? { ...rest, tool_calls: kept } : rest;
      }
    }
    const block = ev.anthropic;
    if (block) {
      const name = block.body.name;
      if (block.event === "content_block_start" && block.body.type === "tool_use" && typeof name === "string" && this.serverTools.has(name))
        this.blocks.add(block.index);
      if (this.blocks.has(block.index)) {
        const { anthropic: _run, ...rest } = out;
        out = rest;
      }
    }
    return out === ev || Object.keys(out).length > 1 ? out : null;
  }
}
