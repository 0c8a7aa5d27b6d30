import { AppError } from "../core/errors";
import { isAutoRoutable, isOfflineModel, type ModelConfig } from "../config/model-config";
import { aliasConflicts, ModelNames } from "./aliases";
import { deriveRequirements, type Requirements, type RouteRequest } from "./requirements";
import { defaultStrategies } from "./strategies/defaults";
import { type Exclusion, missingCapabilities, missingModalities, type RouteContext, type RoutingStrategy, tooSmall } from "./strategy";

/** One routing step: the models it was given, the ones it kept (in order) and why it removed the others. */
export type TraceEntry = {
  strategy: string;
  input: string[];
  output: string[];
  excluded: Exclusion[];
  note?: string;
};

export type RouteResult = {
  model: ModelConfig;
  /** Ordered for failover; the first is `model`. */
  candidates: ModelConfig[];
  /** One human-readable line. */
  reason: string;
  trace: TraceEntry[];
  requirements: Requirements;
  /** Said to the client with the reply: the model named is not the one answering (an offline stand-in). */
  warning?: string;
};

export type RouterOptions = {
  /** Offline models (extra.offline) route only when true. */
  allowOffline?: boolean;
  /**
   * Whether automatic routing may pick a model (e.g. its secret is set); a
   * string says why not. Evaluated once per model when the router is built.
   * A model named explicitly (model_override) bypasses this check, except offline (allowOffline):
   * there the offline model answers in its place, so a client's usual model names work with no keys.
   */
  isAvailable?: (model: ModelConfig) => true | string;
};

// Steps the router itself records in traces; strategies may not take these names.
const RESERVED = new Set(["model_override", "agent_model", "availability", "default_model"]);
const MAX_LISTED = 25;

const namesOf = (models: readonly ModelConfig[]): string[] => models.map((m) => m.name);

/**
 * Picks a model for a request: a known model_override wins; otherwise
 * availability, then the strategies in order; then default_model; else BEM-041.
 * Hard requirements (availability, modality, explicit capabilities, context
 * window) are never relaxed, not by fallback and not by the default.
 */
export class ModelRouter {
  readonly models: readonly ModelConfig[];
  readonly strategies: readonly RoutingStrategy[];
  readonly defaultModel: ModelConfig | null;
  private readonly byName: ReadonlyMap<string, ModelConfig>;
  /** Names and aliases (models.yaml `aliases`). */
  private readonly names: ModelNames;
  /** Why automatic routing skips a model in this deployment; absent when it may pick it. */
  private readonly unavailable: ReadonlyMap<string, string>;
  /** Why a model cannot be called here at all (isAvailable: e.g. its secret is unset). */
  private readonly unconfigured: ReadonlyMap<string, string>;
  /** The models automatic routing may pick, by name, in config order. */
  private readonly availableByName: ReadonlyMap<string, ModelConfig>;
  private readonly available: ModelConfig[];
  private readonly availableSet: ReadonlySet<ModelConfig>;
  private readonly allowOffline: boolean;
  private readonly costSorted: boolean;

  constructor(
    models: readonly ModelConfig[],
    defaultModel: string | null = null,
    options: RouterOptions = {},
    strategies: readonly RoutingStrategy[] = defaultStrategies(),
  ) {
    const byName = new Map<string, ModelConfig>();
    for (const m of models) {
      if (byName.has(m.name)) throw new AppError("BEM-042", `duplicate model name "${m.name}"`);
      byName.set(m.name, m);
    }
    const clash = aliasConflicts(models)[0];
    if (clash) throw new AppError("BEM-042", `model ${models[clash.model]!.name}: ${clash.message}`);
    this.models = [...models];
    this.byName = byName;
    this.names = new ModelNames(models);
    const names = new Set<string>();
    for (const s of strategies) {
      if (names.has(s.name) || RESERVED.has(s.name)) throw new AppError("BEM-042", `duplicate or reserved strategy name "${s.name}"`);
      names.add(s.name);
    }
    this.strategies = [...strategies];
    this.costSorted = names.has("cost_aware");
    if (defaultModel !== null && !byName.has(defaultModel)) {
      throw new AppError("BEM-045", `default_model "${defaultModel}" is not a configured model`);
    }
    this.defaultModel = defaultModel === null ? null : byName.get(defaultModel)!;
    this.allowOffline = options.allowOffline ?? false;
    const unavailable = new Map<string, string>();
    const unconfigured = new Map<string, string>();
    for (const m of models) {
      const configured = isOfflineModel(m) ? true : (options.isAvailable?.(m) ?? true);
      if (configured !== true) unconfigured.set(m.name, configured);
      const ok =
        isOfflineModel(m) && !this.allowOffline
          ? "offline model; enabled only when EDGEWEAVE_OFFLINE=1"
          : !isAutoRoutable(m)
            ? "auto_route: false; name it with model_override"
            : configured;
      if (ok !== true) unavailable.set(m.name, ok);
    }
    this.unavailable = unavailable;
    this.unconfigured = unconfigured;
    this.available = this.models.filter((m) => !unavailable.has(m.name));
    this.availableByName = new Map(this.available.map((m) => [m.name, m]));
    this.availableSet = new Set(this.available);
  }

  /** A router with your own strategy list (run in order after availability). */
  static withStrategies(
    models: readonly ModelConfig[],
    strategies: readonly RoutingStrategy[],
    defaultModel: string | null = null,
    options: RouterOptions = {},
  ): ModelRouter {
    return new ModelRouter(models, defaultModel, options, strategies);
  }

  /** The model a name or alias stands for. */
  modelByName(name: string): ModelConfig | undefined {
    return this.names.lookup(name);
  }

  /** true, or why automatic routing skips this model in this deployment. */
  availabilityOf(name: string): true | string {
    if (!this.byName.has(name)) return "unknown model";
    return this.unavailable.get(name) ?? true;
  }

  resolve(request: RouteRequest): RouteResult {
    const req = deriveRequirements(request, this.models);
    const trace: TraceEntry[] = [];

    const override = request.model_override;
    if (override !== undefined && override !== "") {
      const m = this.names.lookup(override);
      if (m !== undefined) {
        if (isOfflineModel(m) && !this.allowOffline) {
          throw new AppError("BEM-077", `model ${m.name} is the offline model; it is enabled only when EDGEWEAVE_OFFLINE=1`);
        }
        const standIn = this.offlineStandIn(m, req, trace);
        if (standIn !== null) return standIn;
        const why = this.hardFailure(m, req, false);
        if (why !== null) throw new AppError("BEM-046", `model_override ${m.name} cannot serve this request: ${why}`);
        trace.push({ strategy: "model_override", input: [m.name], output: [m.name], excluded: [] });
        return { model: m, candidates: [m], reason: `${m.name}: model_override`, trace, requirements: req };
      }
      // "auto" (OpenAI-style clients) means: route for me.
      if (override !== "auto")
        trace.push({
          strategy: "model_override",
          input: [override],
          output: [],
          excluded: [{ model: override, reason: "unknown model; routing by strategies" }],
        });
    }

    const available = this.available;
    trace.push({
      strategy: "availability",
      input: namesOf(this.models),
      output: namesOf(available),
      excluded: [...this.unavailable].map(([model, reason]) => ({ model, reason })),
    });
    const ctx: RouteContext = { request, requirements: req, models: this.models, hardFailure: (m) => this.hardFailure(m, req, true) };
    let cands: ModelConfig[] = [...available];
    let names = trace[trace.length - 1]!.output;
    let relaxedBy: string | null = available.length === 0 ? "availability" : null;
    for (const s of this.strategies) {
      const r = s.apply(cands, ctx);
      const kept = this.knownAndAvailable(r.kept);
      // A step that changed nothing shares its input's name list (most steps, on most requests).
      const output = sameModels(kept.models, cands) ? names : namesOf(kept.models);
      trace.push({ strategy: s.name, input: names, output, excluded: [...r.excluded, ...kept.excluded], ...(r.note !== undefined ? { note: r.note } : {}) });
      if (cands.length === 0 && kept.models.length > 0) relaxedBy = s.name;
      cands = kept.models;
      names = output;
    }

    const needs = describeNeeds(req);
    const preferred = this.preferredModel(request, req, trace);
    if (preferred !== null) {
      return {
        model: preferred,
        candidates: [preferred, ...cands.filter((m) => m !== preferred)],
        reason: `${preferred.name}: preferred by agent ${request.agent?.name ?? ""} (${needs})`,
        trace,
        requirements: req,
      };
    }

    if (cands.length > 0) {
      const m = cands[0]!;
      const pick = this.costSorted ? "cheapest" : "first";
      const reason =
        relaxedBy !== null
          ? `${m.name}: ${relaxedBy}, ${pick} of ${cands.length} models meeting the hard requirements${req.capabilitiesHard ? "" : req.capabilities.length ? `; relaxed agent tags ${req.capabilities.join(",")}` : ""} (${needs})`
          : `${m.name}: ${pick} of ${cands.length} candidates (${needs})`;
      return { model: m, candidates: cands, reason, trace, requirements: req };
    }

    const d = this.defaultModel;
    if (d !== null) {
      const why = this.hardFailure(d, req, true);
      if (why === null) {
        trace.push({ strategy: "default_model", input: [d.name], output: [d.name], excluded: [] });
        return { model: d, candidates: [d], reason: `${d.name}: default_model, no strategy left a candidate (${needs})`, trace, requirements: req };
      }
      trace.push({ strategy: "default_model", input: [d.name], output: [], excluded: [{ model: d.name, reason: why }] });
    }
    throw new AppError("BEM-041", explainNoModel(trace, needs, d !== null));
  }

  /**
   * Offline (local development), a named model that cannot be called here (its secret is unset) is
   * answered by the offline model, so a client that names its usual model (Claude Code) works with no keys.
   */
  private offlineStandIn(named: ModelConfig, req: Requirements, trace: TraceEntry[]): RouteResult | null {
    const missing = this.unconfigured.get(named.name);
    if (!this.allowOffline || missing === undefined) return null;
    const m = this.available.find((x) => isOfflineModel(x) && this.hardFailure(x, req, false) === null);
    if (m === undefined) return null;
    const why = `${missing}; the offline model answers in its place (EDGEWEAVE_OFFLINE=1)`;
    trace.push({ strategy: "model_override", input: [named.name], output: [m.name], excluded: [{ model: named.name, reason: why }] });
    return {
      model: m,
      candidates: [m],
      reason: `${m.name}: stands in for ${named.name} (${missing})`,
      trace,
      requirements: req,
      warning: `${named.name} is not configured here (${missing}): ${m.name}, the offline model, answered instead`,
    };
  }

  /** The agent's preferred model when it meets the hard requirements; noted in the trace either way. */
  private preferredModel(request: RouteRequest, req: Requirements, trace: TraceEntry[]): ModelConfig | null {
    const name = request.agent?.model;
    if (name === undefined) return null;
    const m = this.byName.get(name);
    const why = m === undefined ? "unknown model" : this.hardFailure(m, req, true);
    trace.push({ strategy: "agent_model", input: [name], output: why === null ? [name] : [], excluded: why === null ? [] : [{ model: name, reason: why }] });
    return why === null ? m! : null;
  }

  /** Why `m` cannot serve the request, or null. `auto`: also apply deployment availability. */
  private hardFailure(m: ModelConfig, req: Requirements, auto: boolean): string | null {
    const unavailable = auto ? this.unavailable.get(m.name) : undefined;
    if (unavailable !== undefined) return unavailable;
    return missingModalities(m, req) ?? (req.capabilitiesHard ? missingCapabilities(m, req) : null) ?? tooSmall(m, req);
  }

  /** Whatever a (custom) strategy returns, unknown, repeated or unavailable models never come back. */
  private knownAndAvailable(models: readonly ModelConfig[]): { models: ModelConfig[]; excluded: Exclusion[] } {
    const kept: ModelConfig[] = [];
    const excluded: Exclusion[] = [];
    const seen = new Set<ModelConfig>();
    for (const m of models) {
      const ours = this.availableSet.has(m) ? m : this.availableByName.get(m.name);
      if (ours === undefined) {
        const why = this.unavailable.get(m.name);
        if (why !== undefined) excluded.push({ model: m.name, reason: why });
      } else if (!seen.has(ours)) {
        seen.add(ours);
        kept.push(ours);
      }
    }
    return { models: kept, excluded };
  }
}

function sameModels(a: readonly ModelConfig[], b: readonly ModelConfig[]): boolean {
  return a.length === b.length && a.every((m, i) => m === b[i]);
}

function describeNeeds(req: Requirements): string {
  let s = `needs ${req.modalities.join("+")}`;
  if (req.capabilities.length > 0) s += `, capabilities ${req.capabilities.join(",")}${req.capabilitiesHard ? "" : " (agent tags, soft)"}`;
  if (req.minContextTokens > 0) s += `, ${req.minContextTokens} tokens`;
  return s;
}

/** BEM-041's message: which step removed which model (first removal per model), bounded in length. */
function explainNoModel(trace: readonly TraceEntry[], needs: string, hadDefault: boolean): string {
  const listed = new Set<string>();
  const parts: string[] = [];
  let more = 0;
  for (const t of trace) {
    if (t.strategy === "model_override") continue;
    if (t.strategy === "default_model") {
      for (const e of t.excluded) parts.push(`default_model ${e.model} fails too (${e.reason})`);
      continue;
    }
    const items: string[] = [];
    for (const e of t.excluded) {
      if (listed.has(e.model)) continue;
      listed.add(e.model);
      if (listed.size > MAX_LISTED) more++;
      else items.push(`${e.model} (${e.reason})`);
    }
    if (items.length > 0) parts.push(`${t.strategy} removed ${items.join(", ")}`);
  }
  const tail = more > 0 ? `; and ${more} more` : "";
  const noDefault = hadDefault ? "" : "; no default_model is set";
  return `No model can serve this request (${needs}): ${parts.join("; ") || "no models are configured"}${tail}${noDefault}`;
}
