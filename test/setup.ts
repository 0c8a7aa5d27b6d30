import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import fc from "fast-check";
import { afterEach } from "vitest";
import { installUpstream, takeStrays } from "./support/upstream";
import { PROPERTY_SEED } from "./support/property-seed";
import { installLogCapture } from "./support/logs";
import { installCollector } from "./support/fake-otlp";

await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
// Property tests are reproducible: every fc.assert / fc.sample without a seed of its own uses this one.
fc.configureGlobal({ seed: PROPERTY_SEED });
// Every outbound fetch goes through the fake upstream; unknown hosts fail the test.
installUpstream();
// Every turn's spans go to the fake OTLP collector (vitest.config.ts sets its URL).
installCollector();
// The worker's log goes to a per-test buffer, printed only when the test fails (test/support/logs.ts).
installLogCapture();

// A request to a host no fake serves fails the test that made it, unless that test said it meant to.
afterEach(() => {
  const { strays, expected } = takeStrays();
  if (strays.length > 0 && !expected) throw new Error(`Unmocked outbound request(s): ${[...new Set(strays)].join(", ")}`);
});
