/**
 * The drill's timings from the acks the workload saw (pure, so the arithmetic is tested alone):
 * time to recover (first acknowledged write in each affected region after the fault) and
 * unavailability per region (the gaps between acknowledged writes, after the fault, longer
 * than a bound).
 */

/**
 * A gap between two acks of one region longer than this counts as unavailability. The drill's
 * workload acks `2 × rate` records/s per region (a global and a local topic); at the lowest rate
 * a drill takes (1 record/s) acks are 0.5 s apart, and a loaded 2-core machine stretches an
 * acks=all round trip to a few hundred ms: 1 s is above both and well below any failover.
 */
export const UNAVAILABLE_GAP_MS = 1_000;

/** One acknowledged write: where, and when its answer came. */
export interface AckAt {
  readonly region: string;
  /** The partition's key, e.g. `topic/3`: recovery is measured where the fault interrupted writes. */
  readonly lane: string;
  readonly atMs: number;
}

/**
 * Time to recover: for each affected region, the first acknowledged write after the fault on
 * what the fault interrupted. A fault usually stops some partitions (a dead leader's) and not
 * others, so "the first ack in the region" would be a few ms whatever happened; instead, each
 * partition (lane) of the region whose acks stop for more than `gapMs` across the fault recovers
 * at its first ack after that gap, and the region at the last of those. A region where no lane
 * stopped recovers at its first ack after the fault. The result is the longest over the affected
 * regions, from `faultAtMs`; null if an affected region, or an interrupted lane, never acked again
 * before `endMs`.
 */
export function recoverMs(acks: readonly AckAt[], affected: readonly string[], faultAtMs: number, endMs: number, gapMs = UNAVAILABLE_GAP_MS): number | null {
  let worst = 0;
  for (const region of affected) {
    const lanes = new Map<string, number[]>();
    for (const a of acks) if (a.region === region) (lanes.get(a.lane) ?? lanes.set(a.lane, []).get(a.lane)!).push(a.atMs);
    let recovered: number | null = null;
    let anyAfter = false;
    for (const times of lanes.values()) {
      times.sort((a, b) => a - b);
      const before = times.filter((t) => t < faultAtMs).at(-1) ?? null;
      const after = times.filter((t) => t >= faultAtMs);
      if (after.length > 0) anyAfter = true;
      // The lane's gaps from its last ack before the fault (or the fault itself) onwards.
      const points = [before ?? faultAtMs, ...after];
      let end: number | null = null;
      for (let i = 1; i < points.length; i++) if (points[i]! - points[i - 1]! > gapMs) end = points[i]!;
      // A lane that acked before the fault and never after it (and the run went on past a gap) did not recover.
      if (after.length === 0 && before !== null && endMs - before > gapMs) return null;
      if (end !== null) recovered = Math.max(recovered ?? 0, end - faultAtMs);
    }
    if (recovered === null) {
      if (!anyAfter) return null;
      recovered = Math.min(...[...lanes.values()].flatMap((t) => t.filter((x) => x >= faultAtMs))) - faultAtMs;
    }
    worst = Math.max(worst, recovered);
  }
  return worst;
}

/**
 * Per region, the sum of the parts of gaps between consecutive acks (and from `fromMs` to the
 * first ack, and from the last to `toMs`) that lie in [fromMs, toMs] and exceed `gapMs`. A gap is
 * counted whole once it exceeds the bound (it is time with no acknowledged write).
 */
export function unavailableMs(acks: ReadonlyMap<string, readonly number[]>, regions: readonly string[], fromMs: number, toMs: number, gapMs = UNAVAILABLE_GAP_MS): Record<string, number> {
  const out: Record<string, number> = {};
  for (const region of regions) {
    const times = [...(acks.get(region) ?? [])].filter((t) => t >= fromMs && t <= toMs).sort((a, b) => a - b);
    const points = [fromMs, ...times, toMs];
    let sum = 0;
    for (let i = 1; i < points.length; i++) {
      const gap = points[i]! - points[i - 1]!;
      if (gap > gapMs) sum += gap;
    }
    out[region] = Math.round(sum);
  }
  return out;
}
