import { AppError } from "../core/errors";
import { fromWireError, toWireError, type WireError, wireOptions } from "../core/wire-error";
import { FailoverError, type Attempt } from "../providers/failover";
import { parseNdjson } from "../providers/ndjson";
import type { DeltaEvent } from "../providers/types";
import type { ModelConfig } from "../config/model-config";
import type { TurnInput, TurnResult } from "./turn";

// How a stateful run travels between the Worker and its thread object: the request is one RPC argument; the answer
// is one byte stream of NDJSON events (RPC streams carry bytes), so deltas reach the client as they come and the
// object keeps running — and saving — whether or not anyone still reads.

/**
 * `scopes`: the memory layers the Worker admitted (pipeline/admit.ts), so the object checks nothing twice.
 * `threadQuota`: MAX_THREADS_PER_TENANT, checked in the object when the run would create the thread
 * (`responseThreadQuota`, MAX_RESPONSE_THREADS_PER_TENANT, when a one-off Responses call would).
 */
export type ObjectTurnRequest = { input: Omit<TurnInput, "timings">; scopes: string[]; stream: boolean; threadQuota: number; responseThreadQuota: number };

/** A run's result without the thread state (that stays in the object). */
export type WireResult = Omit<TurnResult, "timings" | "state"> & { timings: [string, number][] };

/** A run's error: the one WireError shape (core/wire-error.ts), with the provider attempts of a failover. */
export type TurnError = WireError & { attempts?: Attempt[] };

export type TurnEvent =
  | { t: "start"; model: ModelConfig; reason: string }
  | { t: "delta"; ev: DeltaEvent }
  | { t: "done"; result: WireResult }
  | { t: "error"; error: TurnError };

/** How a run ends for its caller: its result, or its error (a turn that streams nothing gets only this, as one RPC value). */
export type FinalEvent = Extract<TurnEvent, { t: "done" | "error" }>;

export function toTurnError(e: unknown): TurnError {
  if (e instanceof FailoverError) return { ...toWireError(e), attempts: e.attempts };
  if (e instanceof AppError) return toWireError(e);
  // Not ours: the Worker logs the detail and answers a plain BEM-001.
  return { code: "BEM-001", message: "Internal error", internal: e instanceof Error ? `${e.name}: ${e.message}\n${e.stack ?? ""}` : String(e) };
}

export function fromTurnError(w: TurnError): AppError {
  if (w.attempts === undefined) return fromWireError(w);
  return new FailoverError(w.code, w.message, w.attempts, wireOptions(w));
}

const encoder = new TextEncoder();
export const encodeEvent = (ev: TurnEvent): Uint8Array => encoder.encode(`${JSON.stringify(ev)}\n`);

/** The events of the object's NDJSON byte stream, in order (our own object wrote each line with JSON.stringify of a TurnEvent). */
export async function* readEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<TurnEvent> {
  for await (const ev of parseNdjson(body)) yield ev as TurnEvent;
}
