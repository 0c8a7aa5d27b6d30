import { BaseStore, type Operation, type OperationResults } from "@langchain/langgraph-checkpoint";
import { type EdgeweaveClientOptions } from "./http.js";
/**
 * The store's index, as LangGraph's stores take it: `fields`, the paths of a value whose texts a
 * search's `query` ranks by (a put's own `index` wins; without either, the whole value). The server
 * embeds with its own embedder (docs/concepts/recall-by-meaning.md), so `dims` and `embeddings` / `embed` are refused
 * rather than ignored.
 */
export type EdgeweaveStoreIndex = {
    fields?: string[];
    dims?: number;
    embeddings?: unknown;
    embed?: unknown;
};
export type EdgeweaveStoreOptions = EdgeweaveClientOptions & {
    index?: EdgeweaveStoreIndex;
};
/**
 * LangGraph store backed by edgeweave's tenant-scoped D1 items.
 *
 *   const store = new EdgeweaveStore({ baseUrl: "http://localhost:8787", apiKey: KEY });
 *   const graph = builder.compile({ checkpointer, store });
 *
 * A namespace's first two labels are a memory scope (`["organization", "acme"]` is
 * `organization:acme`); the key's grants decide which namespaces it reaches, as for facts.
 * Values are JSON. A `batch` goes out as few requests as the server's caps allow (100
 * ops, 1 MiB and 10,000 JSON items a request), in order, each stored all or nothing; so one item's
 * value is at most about 1 MiB (413 BEM-013, before anything is sent) and about 10,000 keys and
 * array items (the server's 400 BEM-014 for that op's request). A request whose reads would return more
 * than the server's 16 MiB of values (413 BEM-133, nothing stored) is sent again in halves. A search's
 * `query` ranks by the indexed fields (`index`), full text and meaning fused, each item with its `score`.
 */
export declare class EdgeweaveStore extends BaseStore {
    private readonly http;
    private readonly fields;
    constructor({ index, ...opts }: EdgeweaveStoreOptions);
    batch<Op extends Operation[]>(operations: Op): Promise<OperationResults<Op>>;
    /**
     * One request; one whose reads would return more than the server's MAX_STORE_READ_BYTES (413 BEM-133,
     * nothing of it stored) goes again as two halves, in order, until each fits or is a single op.
     */
    private send;
}
