import { DurableObject } from "cloudflare:workers";

/** One conversation thread: messages, channels and checkpoints in SQLite. (stub) */
export class ThreadDO extends DurableObject<Env> {}
