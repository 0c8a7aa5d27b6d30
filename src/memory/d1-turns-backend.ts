import { OPERATOR_TENANT } from "../auth/principal";
import { AppError } from "../errors";
import { IdGenerator } from "../thread/ids";
import { Message } from "../thread/message";
import { ownerTenant, type MemoryScope } from "./scope";
import { estimateTokens, type TokenEstimator } from "./tokens";
import { emptyLayer, type LayerLimits, type LayerLoad, type MemoryBackend, type MemoryItem, type TokenedMessage } from "./types";

const ids = new IdGenerator();
const FIRST_PAGE = 32;
const MAX_PAGE = 512;

/**
 * Turns of non-session scopes (e.g. an organization-wide conversation) in D1's
 * scope_turns, bound to one tenant. Rows get their own time-sortable id (clients'
 * message ids are not unique across tenants); loading is a reverse keyset scan with
 * a running token sum, O(turns kept).
 */
export class D1TurnsBackend implements MemoryBackend {
  constructor(
    private readonly db: D1Database,
    readonly tenant: string,
    private readonly estimate: TokenEstimator = estimateTokens,
  ) {}

  async loadLayer(scope: MemoryScope, limits: LayerLimits): Promise<LayerLoad> {
    const out = emptyLayer();
    if (limits.turns === undefined) return out;
    const owner = ownerTenant(scope, this.tenant);
    const key = scope.toString();
    let room = limits.turns;
    const kept: TokenedMessage[] = [];
    let before: string | undefined;
    let page = FIRST_PAGE;
    scan: for (;;) {
      const stmt = before === undefined
        ? this.db.prepare("SELECT id, message, tokens FROM scope_turns WHERE tenant_id = ? AND scope = ? ORDER BY id DESC LIMIT ?").bind(owner, key, page)
        : this.db.prepare("SELECT id, message, tokens FROM scope_turns WHERE tenant_id = ? AND scope = ? AND id < ? ORDER BY id DESC LIMIT ?").bind(owner, key, before, page);
      const { results } = await stmt.all<{ id: string; message: string; tokens: number }>();
      for (const row of results) {
        if (row.tokens > room) {
          out.turnsTruncated = true;
          break scan;
        }
        kept.push({ message: Message.parse(JSON.parse(row.message)), tokens: row.tokens });
        room -= row.tokens;
        before = row.id;
      }
      if (results.length < page) break;
      page = Math.min(page * 2, MAX_PAGE);
    }
    out.turns = kept.reverse();
    return out;
  }

  async appendLayer(scope: MemoryScope, item: MemoryItem): Promise<string> {
    if (item.type !== "turn") throw new AppError("BEM-001", undefined, { internal: "D1TurnsBackend stores turns only" });
    if (scope.isSession) throw new AppError("BEM-001", undefined, { internal: "session turns live in the thread object" });
    if (scope.isSystem !== (this.tenant === OPERATOR_TENANT)) {
      throw new AppError("BEM-023", scope.isSystem ? "Only the operator key writes the system scope" : "The operator key writes only the system scope");
    }
    const id = ids.next();
    await this.db
      .prepare("INSERT INTO scope_turns (id, tenant_id, scope, message, tokens, created_at) VALUES (?, ?, ?, ?, ?, ?)")
      .bind(id, this.tenant, scope.toString(), JSON.stringify(item.message), this.estimate(item.message), Date.now())
      .run();
    return id;
  }

  async forget(id: string): Promise<boolean> {
    const res = await this.db.prepare("DELETE FROM scope_turns WHERE tenant_id = ? AND id = ?").bind(this.tenant, id).run();
    return res.meta.changes > 0;
  }
}
