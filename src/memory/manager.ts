import type { Message } from "../core/message";
import { estimateTokens } from "../core/tokens";
import { FactRoom, factMessages, type Fact, validateFactText, validateKind } from "./facts";
import type { MemoryScope } from "./scope";
import { TokenLimitStrategy } from "./token-limit-strategy";
import { recalledCost } from "../thread/recall";
import type { RecalledTurn } from "../thread/types";
import { DEFAULT_RECALL, excerptMessage, fitRecalled, recallReport } from "./recall-excerpts";
import type { ContextStrategy, FactReport, LoadedContext, LoadedFact, MemoryBackend, RankOptions, TokenedMessage } from "./types";

export type MemoryManagerOptions = {
  /** Share of the budget facts may use (0..1). Default 0.5. */
  factShare?: number;
};

/**
 * The seed's MemoryManager over any MemoryBackend.
 *
 * Budgeting (loadContext): facts are the rules, so they are loaded FIRST with their
 * own share of the budget (default 50%), in layer order and, within a layer, in
 * creation order (or rank.ts's, when the layer does not fit) — earlier layers (e.g.
 * `system`) take precedence — as one system message per scope and kind (facts.ts). If facts exceed
 * their share, the ones that do not fit (the latest of the latest layers) are left
 * out and counted in `dropped.facts`; never silently. Whatever the facts do not use
 * goes to turns, which the ContextStrategy trims to the newest that fit, giving later
 * layers (normally the session) precedence. Trimming turns never removes a fact.
 */
export class MemoryManager {
  private readonly factShare: number;

  constructor(
    readonly backend: MemoryBackend,
    readonly strategy: ContextStrategy = new TokenLimitStrategy(),
    opts: MemoryManagerOptions = {},
  ) {
    this.factShare = Math.min(1, Math.max(0, opts.factShare ?? 0.5));
  }

  /** `rank` chooses among a scope's facts when they do not all fit (see rank.ts). */
  async loadContext(scopes: readonly MemoryScope[], maxTokens: number, rank?: RankOptions): Promise<LoadedContext> {
    const layers = dedupe(scopes);
    const budget = Math.max(0, Math.floor(maxTokens));

    // Facts: every layer asked for the whole facts share in parallel (each returns a
    // prefix, so this stays O(kept)); the share is then spent in layer order.
    // The turns of the last session layer (only sessions hold turns; scopes listed after it,
    // e.g. a docset, hold none) load at the same time, with the whole budget as an upper bound,
    // and are cut to what the facts leave below: recalling earlier turns in the thread's object
    // runs while the facts' queries are in flight.
    const factShare = Math.floor(budget * this.factShare);
    const last = layers.length - 1;
    const sessionAt = layers.findLastIndex((s) => s.isSession);
    const prefetch = sessionAt >= 0 ? sessionAt : last;
    const recallConfig = rank?.recall === false ? undefined : (rank?.recall ?? DEFAULT_RECALL);
    const recall = recallConfig
      ? { ...recallConfig, query: rank?.recallQuery ?? rank?.query ?? "", ...(rank?.channels ? { channels: rank.channels } : {}) }
      : undefined;
    const turnCap = rank?.turnTokens ?? budget;
    const [factLoads, lastTurns] = await Promise.all([
      Promise.all(layers.map((s) => this.backend.loadLayer(s, rank ? { facts: factShare, rank } : { facts: factShare }))),
      prefetch >= 0
        ? this.backend.loadLayer(layers[prefetch]!, recall ? { turns: Math.min(budget, turnCap), recall } : { turns: Math.min(budget, turnCap) })
        : Promise.resolve(undefined),
    ]);
    let droppedFacts = 0;
    const loaded: Fact[] = [];
    // Each scope and kind loads as one message (facts.ts); its header is charged with its first fact.
    const factRoom = new FactRoom(factShare);
    const report: FactReport[] = [];
    for (const load of factLoads) {
      for (const f of load.facts) {
        if (droppedFacts === 0 && factRoom.take(f)) {
          loaded.push(f);
          report.push(reportOf(f, true));
        } else {
          droppedFacts++; // once one fact is left out, all later ones are too (priority order)
          report.push(reportOf(f, false));
        }
      }
      for (const f of load.skipped ?? []) report.push(reportOf(f, false));
      droppedFacts += load.factsDropped;
    }
    const facts = factMessages(loaded);
    // What the messages cost as built: at most what the room was charged (per-line ceilings), so
    // the turns may have the difference.
    const factTokens = facts.reduce((n, m) => n + estimateTokens(m), 0);

    // Turns: newest first, from the last layer back, each with what is left.
    let turnRoom = Math.min(budget - factTokens, turnCap);
    let droppedTurns = false;
    const turnLayers: TokenedMessage[][] = [];
    let recalled: RecalledTurn[] = [];
    let excerpt: Message | undefined;
    for (let i = last; i >= 0; i--) {
      const room = Math.max(0, turnRoom);
      const load = i === prefetch && lastTurns ? lastTurns : await this.backend.loadLayer(layers[i]!, recall ? { turns: room, recall } : { turns: room });
      if (load.recalled?.length && recallConfig) {
        // Recall ran for the whole budget while the facts loaded; cut both to what the facts left.
        const fit = fitRecalled(load.turns, load.recalled, Math.max(0, turnRoom), recallConfig.share);
        recalled = fit.recalled;
        excerpt = recalled.length > 0 ? excerptMessage(recalled) : undefined;
        const layer = [...(excerpt ? [{ message: excerpt, tokens: recalledCost(recalled) }] : []), ...fit.window];
        turnLayers.unshift(layer);
        for (const t of layer) turnRoom -= t.tokens;
        droppedTurns = true;
        break;
      }
      const kept = newestWithin(load.turns, Math.max(0, turnRoom));
      turnLayers.unshift(kept);
      for (const t of kept) turnRoom -= t.tokens;
      if (load.turnsTruncated || kept.length < load.turns.length) {
        droppedTurns = true;
        break; // everything older than a truncated layer is older still: it cannot be kept
      }
    }
    const stored = new Map<Message, number>();
    for (const t of turnLayers.flat()) stored.set(t.message, t.tokens);
    const candidates = [...stored.keys()];
    const turns = this.strategy.apply(candidates, Math.min(budget - factTokens, turnCap), (m) => stored.get(m) ?? 0);
    if (turns.length < candidates.length) droppedTurns = true;
    const turnTokens = turns.reduce((n, m) => n + (stored.get(m) ?? 0), 0);

    const kept = excerpt !== undefined && turns[0] === excerpt ? recalled : [];
    const warnings = [...new Set([...factLoads, ...(lastTurns ? [lastTurns] : [])].flatMap((l) => l.warnings ?? []))];
    return {
      facts,
      turns,
      tokens: { facts: factTokens, turns: turnTokens },
      report,
      recalled: recallReport(kept),
      dropped: { facts: droppedFacts, turns: droppedTurns },
      warnings,
    };
  }

  /** Stores a fact; kind and text are validated here (BEM-063, BEM-062, BEM-064). */
  async remember(scope: MemoryScope, kind: string, text: string): Promise<string> {
    return this.backend.appendLayer(scope, { type: "fact", kind: validateKind(kind), text: validateFactText(text) });
  }

  forget(id: string): Promise<boolean> {
    return this.backend.forget(id);
  }
}

function reportOf(f: LoadedFact, loaded: boolean): FactReport {
  const base = { id: f.id, scope: f.scope, kind: f.kind, key: f.key ?? null, tokens: f.tokens, loaded };
  if (!loaded) return { ...base, reason: "didn't fit" };
  if (!f.why) return { ...base, reason: "fits" };
  const channels = f.why.channels ? { channels: f.why.channels } : {};
  return f.why.score !== undefined ? { ...base, reason: f.why.reason, score: f.why.score, ...channels } : { ...base, reason: f.why.reason, ...channels };
}

/** The newest turns (a suffix) whose stored estimates fit `room`. */
function newestWithin(turns: TokenedMessage[], room: number): TokenedMessage[] {
  let start = turns.length;
  while (start > 0 && turns[start - 1]!.tokens <= room) {
    room -= turns[start - 1]!.tokens;
    start--;
  }
  return start === 0 ? turns : turns.slice(start);
}

function dedupe(scopes: readonly MemoryScope[]): MemoryScope[] {
  const seen = new Set<string>();
  return scopes.filter((s) => {
    const key = s.toString();
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
