import { AppError } from "../errors";
import type { ModelIndexData } from "./compiled";
import { isAutoRoutable, isOfflineModel, type ModelConfig } from "./model-config";
import { ModelIndex } from "./model-index";
import { deriveRequirements, type Requirements, type RouteRequest } from "./requirements";
import { capabilityBits, capabilityReasoner } from "./strategies/capability";
import { hasBit } from "./bitset";
import { defaultStrategies } from "./strategies/defaults";
import { modalityReason } from "./strategies/modality";
import { type Exclusion, type IndexedResult, isIndexed, type RouteContext, type RoutingStrategy } from "./strategy";

export type TraceEntry = {
  strategy: string;
  input: readonly string[];
  output: readonly string[];
  excluded: readonly Exclusion[];
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
};

export type RouterOptions = {
  /** Offline models (extra.offline) route only when true. */
  allowOffline?: boolean;
  /**
   * Whether automatic routing may pick a model (e.g. its secret is set); a
   * string says why not. Evaluated once per model when the router is built.
   * A model named explicitly (model_override) bypasses this check.
   */
  isAvailable?: (model: ModelConfig) => true | string;
  /** Indexes prebuilt at compile time; computed when absent. */
  index?: ModelIndexData;
};

// Steps the router itself records in traces; strategies may not take these names.
const RESERVED = new Set(["model_override", "agent_model", "availability", "default_model"]);
const MAX_LISTED = 25;

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
  private readonly index: ModelIndex;
  private readonly unavailable: (string | null)[];
  /** The availability step never changes for a router: computed once, shared (frozen) by every trace. */
  private readonly availableStep: { kept: readonly number[]; names: readonly string[]; excluded: readonly Exclusion[] };
  private readonly allowOffline: boolean;
  private readonly costSorted: boolean;

  constructor(
    models: readonly ModelConfig[],
    defaultModel: string | null = null,
    options: RouterOptions = {},
    strategies: readonly RoutingStrategy[] = defaultStrategies(),
  ) {
    this.index = new ModelIndex(models, options.index); // BEM-042 on duplicate model names
    this.models = this.index.models;
    const names = new Set<string>();
    for (const s of strategies) {
      if (names.has(s.name) || RESERVED.has(s.name)) throw new AppError("BEM-042", `duplicate or reserved strategy name "${s.name}"`);
      names.add(s.name);
    }
    this.strategies = [...strategies];
    this.costSorted = names.has("cost_aware");
    if (defaultModel !== null && !this.index.byName.has(defaultModel)) {
      throw new AppError("BEM-045", `default_model "${defaultModel}" is not a configured model`);
    }
    this.defaultModel = defaultModel === null ? null : this.models[this.index.byName.get(defaultModel)!]!;
    this.allowOffline = options.allowOffline ?? false;
    this.unavailable = this.models.map((m) => {
      if (isOfflineModel(m) && !this.allowOffline) return "offline model; enabled only when EDGEWEAVE_OFFLINE=1";
      if (!isAutoRoutable(m)) return "auto_route: false; name it with model_override";
      const ok = options.isAvailable?.(m) ?? true;
      return ok === true ? null : ok;
    });
    const kept: number[] = [];
    const excluded: Exclusion[] = [];
    this.unavailable.forEach((why, p) => {
      if (why === null) kept.push(p);
      else excluded.push(Object.freeze({ model: this.index.names[p]!, reason: why }));
    });
    this.availableStep = { kept: Object.freeze(kept), names: Object.freeze(namesOf(kept, this.index.names)), excluded: Object.freeze(excluded) };
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

  modelByName(name: string): ModelConfig | undefined {
    const p = this.index.byName.get(name);
    return p === undefined ? undefined : this.models[p];
  }

  /** true, or why automatic routing skips this model in this deployment. */
  availabilityOf(name: string): true | string {
    const p = this.index.byName.get(name);
    if (p === undefined) return "unknown model";
    return this.unavailable[p] ?? true;
  }

  resolve(request: RouteRequest): RouteResult {
    const idx = this.index;
    const req = deriveRequirements(request, idx);
    const ctx = this.context(request, req);
    const trace: TraceEntry[] = [];

    const override = request.model_override;
    if (override !== undefined && override !== "") {
      const p = idx.byName.get(override);
      if (p !== undefined) {
        const m = this.models[p]!;
        if (isOfflineModel(m) && !this.allowOffline) {
          throw new AppError("BEM-077", `model ${m.name} is the offline model; it is enabled only when EDGEWEAVE_OFFLINE=1`);
        }
        const why = this.hardFailureAt(p, req, false);
        if (why !== null) throw new AppError("BEM-046", `model_override ${m.name} cannot serve this request: ${why}`);
        trace.push({ strategy: "model_override", input: [m.name], output: [m.name], excluded: [] });
        return { model: m, candidates: [m], reason: `${m.name}: model_override`, trace, requirements: req };
      }
      // "auto" (OpenAI-style clients) means: route for me.
      if (override !== "auto") trace.push({
        strategy: "model_override",
        input: [override],
        output: [],
        excluded: [{ model: override, reason: "unknown model; routing by strategies" }],
      });
    }

    const avail = this.availableStep;
    trace.push({ strategy: "availability", input: idx.names, output: avail.names, excluded: avail.excluded });
    let cands: readonly number[] = avail.kept;
    let names: () => readonly string[] = () => avail.names;
    let relaxedBy: string | null = avail.kept.length === 0 ? "availability" : null;
    for (const s of this.strategies) {
      const r = isIndexed(s) ? s.applyIndexed(cands, ctx) : this.applyPlain(s, cands, ctx);
      const out = r.kept === cands ? names : lazyNames(r.kept, idx.names);
      trace.push(lazyEntry(s.name, names, out, () => r.excluded, r.note));
      if (cands.length === 0 && r.kept.length > 0) relaxedBy = s.name;
      cands = r.kept;
      names = out;
    }

    const needs = describeNeeds(req);
    const preferred = this.preferredModel(request, req, trace);
    if (preferred !== null) {
      const rest = cands.filter((p) => p !== preferred);
      const m = this.models[preferred]!;
      return {
        model: m,
        candidates: [m, ...rest.map((p) => this.models[p]!)],
        reason: `${m.name}: preferred by agent ${request.agent?.name ?? ""} (${needs})`,
        trace,
        requirements: req,
      };
    }

    if (cands.length > 0) {
      const candidates = cands.map((p) => this.models[p]!);
      const m = candidates[0]!;
      const pick = this.costSorted ? "cheapest" : "first";
      const reason =
        relaxedBy !== null
          ? `${m.name}: ${relaxedBy}, ${pick} of ${cands.length} models meeting the hard requirements${req.capabilitiesHard ? "" : req.capabilities.length ? `; relaxed agent tags ${req.capabilities.join(",")}` : ""} (${needs})`
          : `${m.name}: ${pick} of ${cands.length} candidates (${needs})`;
      return { model: m, candidates, reason, trace, requirements: req };
    }

    const d = this.defaultModel;
    if (d !== null) {
      const p = idx.byName.get(d.name)!;
      const why = this.hardFailureAt(p, req, true);
      if (why === null) {
        trace.push({ strategy: "default_model", input: [d.name], output: [d.name], excluded: [] });
        return { model: d, candidates: [d], reason: `${d.name}: default_model, no strategy left a candidate (${needs})`, trace, requirements: req };
      }
      trace.push({ strategy: "default_model", input: [d.name], output: [], excluded: [{ model: d.name, reason: why }] });
    }
    throw new AppError("BEM-041", explainNoModel(trace, needs, d !== null));
  }

  /** The agent's preferred model when it meets the hard requirements; noted in the trace either way. */
  private preferredModel(request: RouteRequest, req: Requirements, trace: TraceEntry[]): number | null {
    const name = request.agent?.model;
    if (name === undefined) return null;
    const p = this.index.byName.get(name);
    const why = p === undefined ? "unknown model" : this.hardFailureAt(p, req, true);
    trace.push({ strategy: "agent_model", input: [name], output: why === null ? [name] : [], excluded: why === null ? [] : [{ model: name, reason: why }] });
    return why === null ? p! : null;
  }

  /** Why model `p` cannot serve the request, or null. `auto`: also apply deployment availability. */
  private hardFailureAt(p: number, req: Requirements, auto: boolean, capCheck = this.capabilityCheck(req)): string | null {
    const idx = this.index;
    if (auto) {
      const u = this.unavailable[p];
      if (u != null) return u;
    }
    const missing = req.modalityMask & ~idx.modalityMask[p]!;
    if (missing !== 0) return modalityReason(missing);
    if (capCheck !== null && !hasBit(capCheck.bits, p)) return capCheck.why(p);
    if (idx.maxTokens[p]! < req.minContextTokens) return `context window ${idx.maxTokens[p]} < ${req.minContextTokens} tokens needed`;
    return null;
  }

  /** The explicit (hard) capabilities as a bitset plus a reason builder; null when there are none. */
  private capabilityCheck(req: Requirements): { bits: Uint32Array; why: (p: number) => string } | null {
    if (!req.capabilitiesHard || req.capabilities.length === 0) return null;
    return { bits: capabilityBits(this.index, req.capabilities), why: capabilityReasoner(this.index, req.capabilities) };
  }

  private context(request: RouteRequest, req: Requirements): RouteContext {
    const idx = this.index;
    let capCheck: ReturnType<ModelRouter["capabilityCheck"]> | undefined; // built on first use, once per request
    const check = (p: number) => this.hardFailureAt(p, req, true, (capCheck ??= this.capabilityCheck(req)));
    return {
      request,
      requirements: req,
      models: this.models,
      index: idx,
      hardFailureAt: check,
      hardFailure: (m) => {
        const p = idx.byName.get(m.name);
        return p === undefined ? "unknown model" : check(p);
      },
    };
  }

  /** A custom strategy over ModelConfig objects; whatever it returns, unavailable or unknown models never come back. */
  private applyPlain(s: RoutingStrategy, cands: readonly number[], ctx: RouteContext): IndexedResult {
    const r = s.apply(cands.map((p) => this.models[p]!), ctx);
    const kept: number[] = [];
    const seen = new Set<number>();
    const excluded = [...r.excluded];
    for (const m of r.kept) {
      const p = this.index.byName.get(m.name);
      if (p === undefined || seen.has(p)) continue;
      const u = this.unavailable[p];
      if (u != null) {
        excluded.push({ model: m.name, reason: u });
        continue;
      }
      seen.add(p);
      kept.push(p);
    }
    return { kept, excluded, note: r.note };
  }
}

/** Names of positions, computed when first read: most traces are never read model by model. */
function lazyNames(positions: readonly number[], all: readonly string[]): () => readonly string[] {
  let cached: readonly string[] | undefined;
  return () => (cached ??= namesOf(positions, all));
}

/** A trace entry whose name lists are enumerable getters: it reads, compares and serializes like plain data. */
function lazyEntry(strategy: string, input: () => readonly string[], output: () => readonly string[], excluded: () => Exclusion[], note?: string): TraceEntry {
  const entry = { strategy } as TraceEntry;
  Object.defineProperty(entry, "input", { get: input, enumerable: true });
  Object.defineProperty(entry, "output", { get: output, enumerable: true });
  Object.defineProperty(entry, "excluded", { get: excluded, enumerable: true });
  if (note !== undefined) entry.note = note;
  return entry;
}

function namesOf(positions: readonly number[], all: readonly string[]): string[] {
  const out = new Array<string>(positions.length);
  for (let i = 0; i < positions.length; i++) out[i] = all[positions[i]!]!;
  return out;
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
