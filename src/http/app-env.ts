import type { Principal } from "../auth/principal";

/** Hono typing shared by every route file. */
export type AppEnv = {
  Bindings: Env;
  Variables: { principal: Principal; requestId: string };
};
