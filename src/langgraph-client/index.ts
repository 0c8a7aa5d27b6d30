/** edgeweave as LangGraph's checkpointer and store: `import { EdgeweaveSaver, EdgeweaveStore } from "edgeweave/langgraph"`. */
export { EdgeweaveSaver, type EdgeweaveSaverOptions } from "./saver";
export { EdgeweaveStore } from "./store";
export { EdgeweaveError, type EdgeweaveClientOptions } from "./http";
