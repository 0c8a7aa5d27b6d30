import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { authorize } from "../auth/policy";
import { requireTenant } from "../auth/tenant-store";
import { access } from "../edge/access";
import type { AppEnv } from "../edge/app-env";
import { jsonContent } from "../edge/openapi-errors";
import { errors, TenantParam } from "./admin";
import { validationHook } from "../edge/validation";
import { spanAt } from "../budgets/window";
import {
  Budget,
  BudgetStanding,
  budgetObject,
  budgetOf,
  type BudgetRow,
  CreateBudget,
  insertBudget,
  newBudget,
  deleteBudget,
  getBudget,
  listBudgets,
  PatchBudget,
  patchedBudget,
  updateBudget,
  standingOf,
  configOf,
} from "../budgets/store";

const BudgetParams = TenantParam.extend({
  id: z
    .string()
    .max(64)
    .openapi({ param: { name: "id", in: "path" }, example: "bud_0f3a…" }),
});

const PATH = "/v1/admin/tenants/{tenant}/budgets";

/** The secret that signs the budget's threshold events: shown once, when it is made (with a new alert_url). */
const WithSecret = BudgetStanding.extend({
  alert_secret: z.string().optional().openapi({ description: "Signs the threshold events (scheme b1); shown only when made" }),
}).openapi("BudgetWithSecret");

const createRouteDef = createRoute({
  method: "post",
  path: PATH,
  middleware: access("manage_budgets", "small"),
  tags: ["budgets"],
  summary: "Create a spend budget on the tenant, one of its keys, or a thread (tenant admins)",
  request: { params: TenantParam, body: { content: { "application/json": { schema: CreateBudget } }, required: true } },
  responses: {
    201: jsonContent(WithSecret, "The budget and its current window (alert_secret shown here only)"),
    ...errors("BEM-051", "BEM-052", "BEM-030", "BEM-094", "BEM-232"),
  },
});

const listRouteDef = createRoute({
  method: "get",
  path: PATH,
  middleware: access("manage_budgets"),
  tags: ["budgets"],
  summary: "List the tenant's budgets (at most 100), each with its current window's spend",
  request: { params: TenantParam, query: z.strictObject({}) },
  responses: { 200: jsonContent(z.object({ budgets: z.array(BudgetStanding) }).openapi("BudgetList"), "The budgets, oldest first"), ...errors("BEM-051") },
});

const getRouteDef = createRoute({
  method: "get",
  path: `${PATH}/{id}`,
  middleware: access("manage_budgets"),
  tags: ["budgets"],
  summary: "A budget with its current window's spend, reservations and reset time",
  request: { params: BudgetParams, query: z.strictObject({}) },
  responses: { 200: jsonContent(BudgetStanding, "The budget"), ...errors("BEM-231") },
});

const patchRouteDef = createRoute({
  method: "patch",
  path: `${PATH}/{id}`,
  middleware: access("manage_budgets", "small"),
  tags: ["budgets"],
  summary: "Change a budget's limit, window, anchor, time zone or name (a new window, anchor or zone counts afresh)",
  request: { params: BudgetParams, body: { content: { "application/json": { schema: PatchBudget } }, required: true } },
  responses: { 200: jsonContent(WithSecret, "The budget as changed (alert_secret shown when alert_url changed)"), ...errors("BEM-094", "BEM-231") },
});

const deleteRouteDef = createRoute({
  method: "delete",
  path: `${PATH}/{id}`,
  middleware: access("manage_budgets"),
  tags: ["budgets"],
  summary: "Delete a budget and its counter",
  request: { params: BudgetParams },
  responses: { 200: jsonContent(Budget, "The deleted budget"), ...errors("BEM-231") },
});

/** A budget with its object's count of the current window (nothing counted yet if its object never took its terms). */
export async function standing(env: Env, tenant: string, r: BudgetRow) {
  const counted = await budgetObject(env, tenant, r.id).standing();
  const none = { ...spanAt(r, Date.now()), limit_micro: r.limit_micro, spent_micro: 0, reserved_micro: 0, remaining_micro: r.limit_micro, alerts: [] };
  return standingOf(r, counted ?? none);
}

/** Its object takes the budget's terms before D1 lists it: a listed budget is always enforced. */
async function save(env: Env, tenant: string, r: BudgetRow, write: (db: D1Database, tenant: string, r: BudgetRow) => Promise<void>, secretWas?: string | null) {
  await budgetObject(env, tenant, r.id).configure(configOf(r));
  await write(env.DB, tenant, r);
  const shown = r.alert_secret !== null && r.alert_secret !== secretWas ? { alert_secret: r.alert_secret } : {};
  return { ...(await standing(env, tenant, r)), ...shown };
}

/** A create refused at the insert (the tenant filled up meanwhile) leaves no configured counter behind. */
const insertOrWipe = (env: Env) => async (db: D1Database, tenant: string, r: BudgetRow) => {
  try {
    await insertBudget(db, tenant, r);
  } catch (e) {
    await budgetObject(env, tenant, r.id).wipe();
    throw e;
  }
};

/** Spend budgets: a tenant admin manages its own tenant's (docs/operations/budgets.md). */
export const budgetRoutes = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(createRouteDef, async (c) => {
    const { tenant } = c.req.valid("param");
    authorize(c.get("principal"), "manage_budgets", { tenant });
    await requireTenant(c.env.DB, tenant);
    return c.json(await save(c.env, tenant, await newBudget(c.env, tenant, c.req.valid("json")), insertOrWipe(c.env)), 201);
  })
  .openapi(listRouteDef, async (c) => {
    const { tenant } = c.req.valid("param");
    authorize(c.get("principal"), "manage_budgets", { tenant });
    const rows = await listBudgets(c.env.DB, tenant);
    return c.json({ budgets: await Promise.all(rows.map((r) => standing(c.env, tenant, r))) }, 200);
  })
  .openapi(getRouteDef, async (c) => {
    const { tenant, id } = c.req.valid("param");
    authorize(c.get("principal"), "manage_budgets", { tenant });
    return c.json(await standing(c.env, tenant, await getBudget(c.env.DB, tenant, id)), 200);
  })
  .openapi(patchRouteDef, async (c) => {
    const { tenant, id } = c.req.valid("param");
    authorize(c.get("principal"), "manage_budgets", { tenant });
    const old = await getBudget(c.env.DB, tenant, id);
    return c.json(await save(c.env, tenant, await patchedBudget(c.env, tenant, id, c.req.valid("json")), updateBudget, old.alert_secret), 200);
  })
  .openapi(deleteRouteDef, async (c) => {
    const { tenant, id } = c.req.valid("param");
    authorize(c.get("principal"), "manage_budgets", { tenant });
    const row = await deleteBudget(c.env.DB, tenant, id);
    await budgetObject(c.env, tenant, id).wipe();
    return c.json(budgetOf(row), 200);
  });
