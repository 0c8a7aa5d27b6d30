import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { installUpstream } from "./support/upstream";

await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
// Every outbound fetch goes through the fake upstream; unknown hosts fail the test.
installUpstream();
