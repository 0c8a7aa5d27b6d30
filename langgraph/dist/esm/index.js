/** edgeweave as LangGraph's checkpointer and store: `import { EdgeweaveSaver, EdgeweaveStore } from "edgeweave/langgraph"`. */
export { EdgeweaveSaver } from "./saver.js";
export { EdgeweaveStore } from "./store.js";
export { EdgeweaveError } from "./http.js";
