import type { Principal } from "../core/principal";
import type { Timings } from "../pipeline/timings";

/** Hono typing shared by every route file. */
export type AppEnv = {
  Bindings: Env;
  Variables: { principal: Principal; requestId: string; timings: Timings };
};
