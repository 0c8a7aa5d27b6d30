"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.EdgeweaveError = exports.EdgeweaveStore = exports.EdgeweaveSaver = void 0;
/** edgeweave as LangGraph's checkpointer and store: `import { EdgeweaveSaver, EdgeweaveStore } from "edgeweave/langgraph"`. */
var saver_js_1 = require("./saver.js");
Object.defineProperty(exports, "EdgeweaveSaver", { enumerable: true, get: function () { return saver_js_1.EdgeweaveSaver; } });
var store_js_1 = require("./store.js");
Object.defineProperty(exports, "EdgeweaveStore", { enumerable: true, get: function () { return store_js_1.EdgeweaveStore; } });
var http_js_1 = require("./http.js");
Object.defineProperty(exports, "EdgeweaveError", { enumerable: true, get: function () { return http_js_1.EdgeweaveError; } });
