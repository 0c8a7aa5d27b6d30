import type { ModelConfig } from "../config/model-config";
import { AppError } from "../core/errors";
import { errorText, log } from "../core/log";
import type { Principal } from "../core/principal";
import type { ChatRequest, ChatResult } from "../providers/types";
import { tokensOf } from "./prompt";
import { microUsdOf, usageOf } from "./usage";
import { budgetObject, budgetsFor, type BudgetRow } from "../budgets/store";
import type { Reserved } from "../budgets/budget-object";
import type { EmbedHold } from "../embed/embed-cache";
import { factsEmbedder } from "../embed/embedders";
import { sendAlerts } from "../budgets/alert";
import { ESTIMATE_MARGIN } from "../core/tokens";

/** One model call's reservation: settled once, to what the call really cost (0 if it never reached the provider). */
export type Hold = EmbedHold;

/**
 * Reserves each model call of a turn against every budget the turn spends from (`reserve`), or any other
 * priced call, such as a remote embedder's, for the most it can cost in micro-USD (`hold`).
 */
export type SpendGuard = { reserve(model: ModelConfig, request: ChatRequest): Promise<Hold>; hold(asked: number): Promise<Hold> };

const NO_HOLD: Hold = { settle: () => undefined };

/** The most `request` can cost on `model`: its prompt as sent, and the output it may write (max_tokens, else the model's limit). */
export function mostCost(model: ModelConfig, request: ChatRequest): number {
  const prompt = Math.ceil(tokensOf(request.messages) * ESTIMATE_MARGIN);
  const output = request.max_output_tokens ?? model.max_output_tokens ?? Math.max(0, model.max_tokens - prompt);
  return microUsdOf(model, prompt, output);
}

const usd = (micro: number) => `$${(micro / 1_000_000).toFixed(6)}`;

/** The 402 for a refused call, naming the budget, what is left and when it resets, in the body and headers alike. */
function refusal(b: BudgetRow, no: Extract<Reserved, { ok: false }>, asked: number): AppError {
  const resets_at = no.resets_at === null ? null : new Date(no.resets_at).toISOString();
  const remaining = no.remaining_micro;
  const target = b.kind === "tenant" ? "the tenant" : `${b.kind} ${b.target}`;
  return new AppError(
    "BEM-230",
    `Budget ${b.id}${b.name ? ` (${b.name})` : ""} on ${target} has ${usd(remaining)} left of ${usd(no.limit_micro)}; this call may cost up to ${usd(asked)}. ${
      resets_at ? `It resets at ${resets_at}.` : "It never resets: an admin may raise it."
    }`,
    {
      details: { budget: { id: b.id, kind: b.kind, remaining_usd: remaining / 1_000_000, limit_usd: no.limit_micro / 1_000_000, resets_at } },
      headers: { "x-edgeweave-budget": b.id, ...(resets_at ? { "x-edgeweave-budget-resets-at": resets_at } : {}) },
    },
  );
}

/**
 * The guard of one turn. Which budgets apply is read from D1 at once, while the turn loads its thread
 * and facts; each model call then asks those budgets' objects in parallel (one round trip). A call one
 * budget refuses releases what the others granted and is refused with 402, before anything goes upstream.
 * Settles go out after the call without delaying the answer; the turn's next reservation waits for them.
 */
export function spendGuard(
  env: Env,
  principal: Pick<Principal, "tenant" | "keyId">,
  thread: string | undefined,
  waitUntil: (p: Promise<unknown>) => void,
  user?: string,
  tags?: Readonly<Record<string, string>>,
): SpendGuard {
  const applicable = budgetsFor(env.DB, principal.tenant, { keyId: principal.keyId, thread, user, tags });
  // Read when the first call reserves; a failure meanwhile must not surface as an unhandled rejection.
  applicable.catch(() => undefined);
  let settling: Promise<unknown> = Promise.resolve();
  const guard: SpendGuard = {
    reserve: (model, request) => guard.hold(mostCost(model, request)),
    async hold(asked) {
      const budgets = await applicable;
      if (budgets.length === 0 || asked === 0) return NO_HOLD;
      await settling;
      const answers = await Promise.all(budgets.map((b) => budgetObject(env, principal.tenant, b.id).reserve(asked)));
      const held = budgets.flatMap((b, i) => {
        const a = answers[i]!;
        return a.ok && a.hold !== null ? [{ b, hold: a.hold }] : [];
      });
      const settle = (micro: number) => {
        const done = Promise.all(held.map((h) => budgetObject(env, principal.tenant, h.b.id).settle(h.hold, micro))).catch((e: unknown) => {
          log.error("budget settle", { message: errorText(e) });
          return [];
        });
        settling = done;
        waitUntil(done);
        // Thresholds reached go out after the settle; the turn's next reservation does not wait for them.
        waitUntil(done.then((reached) => Promise.all(held.map((h, i) => sendAlerts(principal.tenant, h.b, reached[i] ?? [])))));
      };
      const refused = answers.findIndex((a) => !a.ok);
      const no = answers[refused];
      if (no && !no.ok) {
        waitUntil(sendAlerts(principal.tenant, budgets[refused]!, no.alerts));
        settle(0);
        throw refusal(budgets[refused]!, no, asked);
      }
      let once = false;
      return {
        settle(micro) {
          if (once) return;
          once = true;
          settle(micro);
        },
      };
    },
  };
  return guard;
}

/**
 * A model call beside a turn's own (a summary, a fact extraction) held against the budgets like any other:
 * reserved before it goes upstream (a refusal is BEM-230), settled to the cost its usage row bills, or to 0 if it failed.
 */
export async function heldCall(guard: SpendGuard, model: ModelConfig, request: ChatRequest, call: () => Promise<ChatResult>): Promise<ChatResult> {
  const hold = await guard.reserve(model, request);
  try {
    const value = await call();
    hold.settle(Math.round(usageOf(request.messages, model, value).cost * 1_000_000));
    return value;
  } catch (e) {
    hold.settle(0);
    throw e;
  }
}

/**
 * What holds a facts search's query embedding outside a run (GET /v1/memory/facts?q=, POST /v1/memory/context, MCP):
 * the caller's key and tenant budgets, when the facts embedder is a remote one (the built-in table costs nothing).
 */
export const factsQueryHolder = (env: Env, principal: Pick<Principal, "tenant" | "keyId">, waitUntil: (p: Promise<unknown>) => void): SpendGuard | undefined =>
  factsEmbedder().remote ? spendGuard(env, principal, undefined, waitUntil) : undefined;
