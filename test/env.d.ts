declare namespace Cloudflare {
  interface Env {
    TEST_MIGRATIONS: import("cloudflare:test").D1Migration[];
    SCHEMA_CHECK_DB: D1Database;
    /** A database of its own for a test that migrates data written under older migrations. */
    MIGRATION_CHECK_DB: D1Database;
    /** Another, for migration 0035's (test/memory/fts-marks-migration.test.ts): each migrates from its own starting point. */
    MARKS_MIGRATION_DB: D1Database;
  }
}

declare module "*?raw" {
  const text: string;
  export default text;
}
