declare namespace Cloudflare {
  interface Env {
    TEST_MIGRATIONS: import("cloudflare:test").D1Migration[];
    SCHEMA_CHECK_DB: D1Database;
  }
}

declare module "*?raw" {
  const text: string;
  export default text;
}
