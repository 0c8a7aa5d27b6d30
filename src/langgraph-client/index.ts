/** edgeweave as LangGraph's checkpointer and store: `import { EdgeweaveSaver, EdgeweaveStore } from "edgeweave/langgraph"`. */
export { EdgeweaveSaver, type EdgeweaveSaverOptions } from "./saver.js";
export { EdgeweaveStore, type EdgeweaveStoreIndex, type EdgeweaveStoreOptions } from "./store.js";
export { EdgeweaveError, type EdgeweaveClientOptions } from "./http.js";
