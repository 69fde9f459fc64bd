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
 */

/** One measured step. */
export interface SearchStep {
  /** Set by the search: which part of it the step was. */
  phase?: 'double' | 'bisect' | 'confirm';
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
  const round = (r: number) => Math.max(o.granularityPerSec, Math.round(r / o.granularityPerSec) * o.granularityPerSec);
  let lo = 0;
  let hi: number | null = null;
  let rate = round(o.startPerSec);
  for (let d = 0; d <= o.doublingsMax; d++) {
    const step = await measure(rate);
    steps.push({ ...step, phase: 'double' });
    if (!step.pass) {
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
    const step = await measure(mid);
    steps.push({ ...step, phase: 'bisect' });
    if (step.pass) lo = mid;
    else hi = mid;
  }
  if (o.confirm === undefined || lo === 0) return { maxPerSec: lo, steps, confirmed: false };
  const backoff = o.confirmBackoff ?? 0.8;
  if (!(backoff > 0 && backoff < 1)) throw new RangeError(`confirmBackoff must be in (0, 1), got ${backoff}`);
  for (let c = 0; c < (o.confirmAttemptsMax ?? 2); c++) {
    const step = await o.confirm(lo);
    steps.push({ ...step, phase: 'confirm' });
    if (step.pass) return { maxPerSec: lo, steps, confirmed: true };
    const lower = Math.floor((lo * backoff) / o.granularityPerSec) * o.granularityPerSec;
    if (lower <= 0) return { maxPerSec: 0, steps, confirmed: false };
    lo = lower;
  }
  // Out of confirmations: the last rate, lowered but not confirmed, is the answer (`confirmed` says so).
  return { maxPerSec: lo, steps, confirmed: false };
}
