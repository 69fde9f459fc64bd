/**
 * The search for the maximum sustainable rate: the highest offered rate whose admitted p99 stays
 * under a threshold (3x the unloaded p99) with every request admitted. Doubling from a start rate
 * until a step fails, then bisection between the last rate that held and the first that did not;
 * each step is one measured run of the caller's. Then the answer is confirmed by a longer run
 * (`confirm`): near its limit the cell can hold a rate for a few seconds and then fall behind (with
 * few requests in flight its batches are small and cost the brokers more per record, so a queue,
 * once it starts, grows), and a rate that does not hold in the 1x case is not sustainable; a rate
 * that fails confirmation is lowered by `confirmBackoff` and confirmed again. Bounded: at most
 * `doublingsMax` doublings, `bisectSteps` bisections and `confirmAttemptsMax` confirmations.
 *
 * A step that fails is run again (`retriesOnFail`) and fails only if every run fails: on this
 * 2-core machine, shared with other work, one stall of 50 ms (a broker's full GC, an fsync behind
 * someone else's writes, the scheduler) puts 1% of a 5 s step over the limit at any rate, while a
 * rate the cell cannot carry fails every time. Seen: 500/s failed at p99 34 ms (limit 30) with the
 * machine's load average at 5, after 1000/s had held earlier in the day.
 */

/** One measured step. */
export interface SearchStep {
  /** Set by the search: which part of it the step was, and which run of that rate (1, 2, …). */
  phase?: 'double' | 'bisect' | 'confirm';
  attempt?: number;
  ratePerSec: number;
  p99Ms: number | null;
  /** Share of the requests due that were admitted (2xx). */
  admittedShare: number;
  pass: boolean;
}

export interface SearchOptions {
  startPerSec: number;
  doublingsMax: number;
  bisectSteps: number;
  /** Rates are rounded to a multiple of this. */
  granularityPerSec: number;
  /** The longer run that confirms the answer; without it, no confirmation. */
  confirm?: (ratePerSec: number) => Promise<SearchStep>;
  confirmAttemptsMax?: number;
  /** A rate that fails confirmation is multiplied by this (< 1) and confirmed again. */
  confirmBackoff?: number;
  /** Runs again of a failed step (or confirmation) before it counts as failed (default 0). */
  retriesOnFail?: number;
}

/** Whether a step holds: p99 under the threshold and (nearly) every request admitted. */
export function stepHolds(p99Ms: number | null, admittedShare: number, thresholdMs: number, admittedShareMin: number): boolean {
  return p99Ms !== null && p99Ms <= thresholdMs && admittedShare >= admittedShareMin;
}

/**
 * Runs the search with `measure(rate)` and returns the highest rate that held (0 if even the
 * lowest rate tried failed; the caller reports that as a failure), every step, and whether the
 * answer passed its confirmation run.
 */
export async function searchMaxRate(measure: (ratePerSec: number) => Promise<SearchStep>, o: SearchOptions): Promise<{ maxPerSec: number; steps: SearchStep[]; confirmed: boolean }> {
  const steps: SearchStep[] = [];
  const retries = o.retriesOnFail ?? 0;
  /** Runs a rate until it holds or its retries are spent; every run is kept in the steps. */
  const run = async (m: (rate: number) => Promise<SearchStep>, rate: number, phase: NonNullable<SearchStep['phase']>): Promise<boolean> => {
    for (let attempt = 1; attempt <= 1 + retries; attempt++) {
      const step = await m(rate);
      steps.push({ ...step, phase, attempt });
      if (step.pass) return true;
    }
    return false;
  };
  const round = (r: number) => Math.max(o.granularityPerSec, Math.round(r / o.granularityPerSec) * o.granularityPerSec);
  let lo = 0;
  let hi: number | null = null;
  let rate = round(o.startPerSec);
  for (let d = 0; d <= o.doublingsMax; d++) {
    if (!(await run(measure, rate, 'double'))) {
      hi = rate;
      break;
    }
    lo = rate;
    rate = round(rate * 2);
  }
  // Never failed within the doublings: the largest rate tried is the answer (the search's ceiling).
  for (let b = 0; hi !== null && b < o.bisectSteps; b++) {
    const mid = round((lo + hi) / 2);
    if (mid <= lo || mid >= hi) break;
    if (await run(measure, mid, 'bisect')) lo = mid;
    else hi = mid;
  }
  if (o.confirm === undefined || lo === 0) return { maxPerSec: lo, steps, confirmed: false };
  const backoff = o.confirmBackoff ?? 0.8;
  if (!(backoff > 0 && backoff < 1)) throw new RangeError(`confirmBackoff must be in (0, 1), got ${backoff}`);
  for (let c = 0; c < (o.confirmAttemptsMax ?? 2); c++) {
    if (await run(o.confirm, lo, 'confirm')) return { maxPerSec: lo, steps, confirmed: true };
    const lower = Math.floor((lo * backoff) / o.granularityPerSec) * o.granularityPerSec;
    if (lower <= 0) return { maxPerSec: 0, steps, confirmed: false };
    lo = lower;
  }
  // Out of confirmations: the last rate, lowered but not confirmed, is the answer (`confirmed` says so).
  return { maxPerSec: lo, steps, confirmed: false };
}
