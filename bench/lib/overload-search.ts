/**
 * The search for the maximum sustainable rate: the highest offered rate whose admitted p99 stays
 * under a threshold (3x the unloaded p99) with every request admitted. Doubling from a start rate
 * until a step fails, then bisection between the last rate that held and the first that did not;
 * each step is one measured run of the caller's. Bounded: at most `doublingsMax` doublings and
 * `bisectSteps` bisections.
 */

/** One measured step. */
export interface SearchStep {
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
}

/** Whether a step holds: p99 under the threshold and (nearly) every request admitted. */
export function stepHolds(p99Ms: number | null, admittedShare: number, thresholdMs: number, admittedShareMin: number): boolean {
  return p99Ms !== null && p99Ms <= thresholdMs && admittedShare >= admittedShareMin;
}

/**
 * Runs the search with `measure(rate)` and returns the highest rate that held (0 if even the
 * lowest rate tried failed; the caller reports that as a failure) and every step.
 */
export async function searchMaxRate(measure: (ratePerSec: number) => Promise<SearchStep>, o: SearchOptions): Promise<{ maxPerSec: number; steps: SearchStep[] }> {
  const steps: SearchStep[] = [];
  const round = (r: number) => Math.max(o.granularityPerSec, Math.round(r / o.granularityPerSec) * o.granularityPerSec);
  let lo = 0;
  let hi: number | null = null;
  let rate = round(o.startPerSec);
  for (let d = 0; d <= o.doublingsMax; d++) {
    const step = await measure(rate);
    steps.push(step);
    if (!step.pass) {
      hi = rate;
      break;
    }
    lo = rate;
    rate = round(rate * 2);
  }
  // Never failed within the doublings: the largest rate tried is the answer (the search's ceiling).
  if (hi === null) return { maxPerSec: lo, steps };
  for (let b = 0; b < o.bisectSteps; b++) {
    const mid = round((lo + hi) / 2);
    if (mid <= lo || mid >= hi) break;
    const step = await measure(mid);
    steps.push(step);
    if (step.pass) lo = mid;
    else hi = mid;
  }
  return { maxPerSec: lo, steps };
}
