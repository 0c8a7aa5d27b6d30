import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach } from "vitest";
import { installUpstream, takeStrays } from "./support/upstream";
import { installLogCapture } from "./support/logs";

await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
// Every outbound fetch goes through the fake upstream; unknown hosts fail the test.
installUpstream();
// The worker's log goes to a per-test buffer, printed only when the test fails (test/support/logs.ts).
installLogCapture();

// A request to a host no fake serves fails the test that made it, unless that test said it meant to.
afterEach(() => {
  const { strays, expected } = takeStrays();
  if (strays.length > 0 && !expected) throw new Error(`Unmocked outbound request(s): ${[...new Set(strays)].join(", ")}`);
});
