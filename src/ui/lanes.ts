/**
 * Branch lanes of a checkpoint history: a checkpoint continues its parent's lane when it is
 * the parent's first child; any later child of the same parent opens a new lane (a branch).
 */
export type LaneInput = { id: string; parent_id: string | null; created_at: number; step: number };

export function lanes(checkpoints: readonly LaneInput[]): { lane: Map<string, number>; children: Map<string, string[]> } {
  const oldestFirst = [...checkpoints].sort((a, b) => a.created_at - b.created_at || a.step - b.step);
  const lane = new Map<string, number>();
  const children = new Map<string, string[]>();
  let next = 0;
  for (const cp of oldestFirst) {
    const p = cp.parent_id;
    let siblings: string[] | undefined;
    if (p !== null) {
      siblings = children.get(p) ?? [];
      children.set(p, siblings);
    }
    const parentLane = p === null ? undefined : lane.get(p);
    lane.set(cp.id, siblings?.length === 0 && parentLane !== undefined ? parentLane : next++);
    siblings?.push(cp.id);
  }
  return { lane, children };
}
