// Stands in for `ajv` and `ajv-formats` in the worker bundle (wrangler.toml [alias]): the MCP SDK
// uses them only to check a client's answer to an elicitation, which this server never asks for,
// and they were ~150 KB of the bundle. Reaching this is a defect, so it says so.
export default class AjvAbsent {
  constructor() {
    throw new Error("ajv is not bundled: edgeweave's MCP server validates no JSON Schema (src/mcp/server.ts)");
  }
}
