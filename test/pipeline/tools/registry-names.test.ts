import { describe, expect, it } from "vitest";
import { SERVER_TOOL_NAMES } from "../../../src/config/tool-names";
import { SERVER_TOOLS } from "../../../src/pipeline/server-tools";

describe("server tool names", () => {
  it("the build-time name list and the registry agree", () => {
    expect([...SERVER_TOOLS.keys()].sort()).toEqual([...SERVER_TOOL_NAMES].sort());
  });
});
