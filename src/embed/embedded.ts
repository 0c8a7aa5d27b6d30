import { errorText, log } from "../core/log";
import { decodeWordTable, embedWords, WORD_TABLE_DIMS, WORD_TABLE_FILE, WORD_TABLE_ID, type WordTable } from "./word-table";

/**
 * The embedded embedder's table, once per isolate: read from the static assets (the ASSETS binding,
 * never the worker bundle) on first use and decoded once; the Worker and every thread object in the
 * isolate share it. A failed read is logged and retried on a later call; until then recall runs on
 * full-text alone.
 */
let table: WordTable | undefined;
let loading: Promise<WordTable | undefined> | undefined;
/** How long the isolate's read and decode took (ms), for the report and the bench. */
export let wordTableLoadMs = 0;

/** The isolate's static assets, as the Worker or a thread object first saw them (loadWordTable reads through them). */
let known: Fetcher | undefined;

export function loadWordTable(assets: Fetcher | undefined = known): Promise<WordTable | undefined> {
  if (table) return Promise.resolve(table);
  known ??= assets;
  if (!assets) return Promise.resolve(undefined);
  loading ??= (async () => {
    const t0 = performance.now();
    try {
      const res = await assets.fetch(`https://assets.local/${WORD_TABLE_FILE}`);
      if (!res.ok) throw new Error(`${WORD_TABLE_FILE}: HTTP ${res.status}`);
      table = decodeWordTable(await res.arrayBuffer());
      wordTableLoadMs = performance.now() - t0;
      return table;
    } catch (e) {
      log.error("word-table", { message: errorText(e) });
      loading = undefined;
      return undefined;
    }
  })();
  return loading;
}

/** The isolate's static assets, for a later loadWordTable without them (the Worker's requests and queue batches name them). */
export function knowAssets(assets: Fetcher | undefined): void {
  known ??= assets;
}

/** The table when this isolate has it. */
export const loadedWordTable = (): WordTable | undefined => table;

/** Text to vector with the embedded table (undefined before it is loaded). */
export function embedEmbedded(text: string): Float32Array | undefined {
  return table ? embedWords(table, text) : undefined;
}

export const EMBEDDED_ID = WORD_TABLE_ID;

/** The embedded embedder as the thread object's dense channel (src/thread/recall-vectors.ts). */
export const EMBEDDED_TURNS = { id: WORD_TABLE_ID, dims: WORD_TABLE_DIMS, embed: embedEmbedded };
