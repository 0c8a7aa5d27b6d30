import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { AppError } from "../core/errors";
import { listUsage, UsageCause, utcDay } from "../pipeline/usage";
import { access } from "../edge/access";
import type { AppEnv } from "../edge/app-env";
import { errorResponses, jsonContent } from "../edge/openapi-errors";
import { validationHook } from "../edge/validation";
import { decide } from "../auth/policy";
import { BudgetStanding, listBudgets } from "../budgets/store";
import { standing } from "./budgets";

/** A calendar day, YYYY-MM-DD (2026-13-01 or 2026-02-30 is a 400, not a range that matches nothing). */
const Day = z.iso.date();
const UsageList = z
  .object({
    from: Day,
    to: Day,
    data: z.array(
      z.object({
        day: Day,
        model: z.string(),
        cause: UsageCause.openapi({
          description:
            "What made the provider calls: turn, webhook, summarization (middleware), summarize_task, extraction, embedding (a remote embedder, docs/concepts/recall-by-meaning.md)",
        }),
        requests: z.number(),
        estimated_requests: z
          .number()
          .openapi({ description: "How many of the requests had their tokens estimated: the provider reported no usage (e.g. a stream cut before its end)" }),
        prompt_tokens: z.number(),
        completion_tokens: z.number(),
        cost: z.number(),
      }),
    ),
    total: z.object({ requests: z.number(), estimated_requests: z.number(), prompt_tokens: z.number(), completion_tokens: z.number(), cost: z.number() }),
    budgets: z.array(BudgetStanding).openapi({
      description: "The spend budgets over the caller, each with its current window (an admin sees all the tenant's; another key its tenant's and its own)",
    }),
  })
  .openapi("UsageList");

const listUsageRoute = createRoute({
  method: "get",
  path: "/v1/usage",
  middleware: access("any_key"),
  tags: ["usage"],
  summary: "Usage per day, model and cause for the caller's tenant (every provider call is counted)",
  request: { query: z.strictObject({ from: Day.optional(), to: Day.optional() }) },
  responses: { 200: jsonContent(UsageList, "Usage rows, oldest day first"), ...errorResponses() },
});

/** GET /v1/usage: the caller's tenant's tokens and cost per day and model. */
export const usageRoutes = new OpenAPIHono<AppEnv>({ defaultHook: validationHook }).openapi(listUsageRoute, async (c) => {
  const q = c.req.valid("query");
  const to = q.to ?? utcDay(Date.now());
  const from = q.from ?? utcDay(Date.now() - 30 * 86_400_000);
  if (from > to) throw new AppError("BEM-011", `from (${from}) is after to (${to})`);
  const principal = c.get("principal");
  const [data, rows] = await Promise.all([listUsage(c.env.DB, principal.tenant, from, to), listBudgets(c.env.DB, principal.tenant)]);
  const mine = rows.filter((r) => principal.role === "admin" || r.kind === "tenant" || (r.kind === "key" && r.target === principal.keyId));
  // Where threshold events go may carry a token: only a key that manages budgets sees it.
  const manages = decide(principal, "manage_budgets", { tenant: principal.tenant }).allow;
  const budgets = await Promise.all(
    mine.map(async (r) => {
      const s = await standing(c.env, principal.tenant, r);
      return manages ? s : { ...s, alert_url: null };
    }),
  );
  const total = data.reduce(
    (t, r) => ({
      requests: t.requests + r.requests,
      estimated_requests: t.estimated_requests + r.estimated_requests,
      prompt_tokens: t.prompt_tokens + r.prompt_tokens,
      completion_tokens: t.completion_tokens + r.completion_tokens,
      cost: t.cost + r.cost,
    }),
    { requests: 0, estimated_requests: 0, prompt_tokens: 0, completion_tokens: 0, cost: 0 },
  );
  return c.json({ from, to, data, total, budgets }, 200);
});
