/**
 * Names of the server tools an agent may list in models.yaml. The build-time config
 * check reads this list (it cannot load the tools: some need worker types); the
 * server tools (pipeline/server-tools.ts) must implement exactly these (test/pipeline/tools/registry-names.test.ts).
 */
export const SERVER_TOOL_NAMES = ["get_last_user_message", "set_user_name", "remember", "recall", "forget"] as const;
