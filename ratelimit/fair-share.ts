/**
 * Max-min fair shares by weight (water filling): capacity is split in proportion to weight, a
 * claimant that wants less than its share gets what it wants, and what it leaves is split again
 * among the others, until no one is left wanting or nothing is left. A tenant sending 10x its
 * share gets its share, not 10x, and cannot starve the others.
 */

export interface Claim {
  key: string;
  /** What it asks for (≥ 0). */
  demand: number;
  /** Its weight (> 0). */
  weight: number;
}

/** Each claimant's share of `capacity` (the shares sum to min(capacity, total demand)). */
export function maxMinFairShares(capacity: number, claims: readonly Claim[]): Map<string, number> {
  const out = new Map<string, number>(claims.map((c) => [c.key, 0]));
  let left = Math.max(0, capacity);
  let open = claims.filter((c) => c.demand > 0 && c.weight > 0);
  // Each pass satisfies at least one claimant or spends everything: at most claims.length passes.
  while (left > 1e-9 && open.length > 0) {
    const weights = open.reduce((n, c) => n + c.weight, 0);
    const perWeight = left / weights;
    const satisfied = open.filter((c) => c.demand - out.get(c.key)! <= perWeight * c.weight);
    if (satisfied.length === 0) {
      for (const c of open) out.set(c.key, out.get(c.key)! + perWeight * c.weight);
      left = 0;
      break;
    }
    for (const c of satisfied) {
      left -= c.demand - out.get(c.key)!;
      out.set(c.key, c.demand);
    }
    open = open.filter((c) => !satisfied.includes(c));
  }
  return out;
}

/** Jain's fairness index of `xs` (1 when all equal, 1/n when one has everything). */
export function jainIndex(xs: readonly number[]): number {
  if (xs.length === 0) return 1;
  const sum = xs.reduce((a, b) => a + b, 0);
  const squares = xs.reduce((a, b) => a + b * b, 0);
  return squares === 0 ? 1 : (sum * sum) / (xs.length * squares);
}
