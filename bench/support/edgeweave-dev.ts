// One checkout of edgeweave under `wrangler dev` for a bench that compares builds: its own local state, rate
// limits lifted (the bench measures the turn, not the limiter), a tenant with an admin key and the 10
// organization facts every turn bench loads, and threads seeded with the same 1,000 messages.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { json, THREAD_SEED, turnBody } from "./turn-setup.ts";
import { type DevServer, run, startWranglerDev } from "./wrangler-dev.ts";

const OPERATOR = "bench-operator-key";

export type EdgeweaveDev = DevServer & {
  key: string;
  turn(thread: string): Promise<unknown>;
  seedThread(thread: string): Promise<unknown>;
  done(): Promise<void>;
};

/** `noAssets`: without the [assets] layer `wrangler dev` runs as a router in front of the worker. */
export async function startEdgeweave(
  dir: string,
  opts: { noAssets?: boolean; port?: number; inspectorPort?: number; configName?: string } = {},
): Promise<EdgeweaveDev> {
  const persist = mkdtempSync(join(tmpdir(), "ew-cmp-"));
  const configName = opts.configName ?? "wrangler.cmp.toml";
  let config = readFileSync(join(dir, "wrangler.toml"), "utf8").replace(/limit = \d+/g, "limit = 1000000");
  if (opts.noAssets) config = config.replace(/\[assets\][^[]*/, "");
  writeFileSync(join(dir, configName), config);
  const done = async (s?: DevServer) => {
    await s?.stop();
    rmSync(persist, { recursive: true, force: true });
    rmSync(join(dir, configName), { force: true });
  };
  let s: DevServer | undefined;
  try {
    await run("npx", ["wrangler", "d1", "migrations", "apply", "DB", "--local", "--config", join(dir, configName), "--persist-to", persist]);
    s = await startWranglerDev({
      cwd: dir,
      config: configName,
      persistTo: persist,
      vars: { OPERATOR_KEY: OPERATOR },
      ...(opts.port ? { port: opts.port } : {}),
      ...(opts.inspectorPort ? { inspectorPort: opts.inspectorPort } : {}),
    });
    const url = s.url;
    const tenant = `bench-${Date.now()}`;
    await json(`${url}/v1/admin/tenants`, { key: OPERATOR, body: { id: tenant } });
    const { key } = (await json(`${url}/v1/admin/tenants/${tenant}/keys`, { key: OPERATOR, body: { role: "admin" } })) as { key: string };
    for (let i = 0; i < 10; i++)
      await json(`${url}/v1/memory/facts`, {
        key,
        body: { scope: "organization:acme", kind: "rule", text: `Rule ${i}: keep answers under ${i + 3} sentences.` },
      });
    const server = s;
    return {
      ...server,
      key,
      turn: (t: string) => json(`${url}/v1/chat/completions`, { key, body: turnBody(t) }),
      seedThread: (t: string) => json(`${url}/v1/threads/${t}/state`, { key, body: { ops: [{ op: "append", messages: THREAD_SEED }] } }),
      done: () => done(server),
    };
  } catch (e) {
    await done(s);
    throw e;
  }
}
