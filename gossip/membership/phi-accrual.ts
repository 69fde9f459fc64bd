/**
 * The phi accrual failure detector (Hayashibara, Défago, Yared, Katayama 2004, "The φ accrual
 * failure detector") over the inter-arrival times of one member's acks:
 *
 *   phi(t) = −log10(1 − F(t − t_last))
 *
 * with F the normal CDF of the recorded intervals (mean μ, standard deviation σ). F uses the
 * logistic approximation Akka's PhiAccrualFailureDetector uses (Bowling et al. 2009):
 * F(y) ≈ 1 / (1 + e^(−y(1.5976 + 0.070566 y²))), y = (t − μ)/σ, which stays finite far in the
 * tail where 1 − F underflows. σ is floored (`stdDevMsMin`) so a very regular history does not
 * turn a few ms of jitter into certainty. The window is bounded (`windowMax` intervals); before
 * the second ack the interval is estimated (`firstIntervalMs`), as Akka seeds its history.
 *
 * How phi takes part in the mesh: it reports, it does not decide (gossip/README.md). SWIM probes
 * each member once per round of n − 1 probe intervals, so a member's acks arrive that rarely:
 * at 200 members about every 100 s. A phi threshold gating suspicion would delay detection by
 * several such rounds. Suspicion stays SWIM's (probe, ping-req, suspect, refute); phi is shown
 * for every member (members(), /v1/mesh, metrics) with the threshold as a warning line.
 */

/** Reported phi is capped: beyond this the member is silent far past anything seen, and JSON needs a finite number. */
export const PHI_REPORTED_MAX = 100;

/** Options of one detector. */
export interface PhiOptions {
  windowMax: number;
  stdDevMsMin: number;
  /** The interval assumed before two acks have been seen. */
  firstIntervalMs: number;
}

/** One member's ack history and its phi. */
export class PhiAccrual {
  private readonly intervals: number[] = [];
  private next = 0;
  private sum = 0;
  private sumSquares = 0;
  private lastMs: number | null = null;

  constructor(private readonly options: PhiOptions) {}

  /** Records an ack received at `nowMs` (monotonic). */
  heartbeat(nowMs: number): void {
    if (this.lastMs !== null) {
      const interval = Math.max(0, nowMs - this.lastMs);
      if (this.intervals.length < this.options.windowMax) {
        this.intervals.push(interval);
      } else {
        const old = this.intervals[this.next]!;
        this.sum -= old;
        this.sumSquares -= old * old;
        this.intervals[this.next] = interval;
        this.next = (this.next + 1) % this.options.windowMax;
      }
      this.sum += interval;
      this.sumSquares += interval * interval;
    }
    this.lastMs = nowMs;
  }

  /** Intervals recorded (at most windowMax). */
  get samples(): number {
    return this.intervals.length;
  }

  /** Phi at `nowMs`; 0 before the first ack. */
  phi(nowMs: number): number {
    if (this.lastMs === null) return 0;
    const n = this.intervals.length;
    const mean = n === 0 ? this.options.firstIntervalMs : this.sum / n;
    const variance = n < 2 ? (mean / 4) ** 2 : Math.max(0, this.sumSquares / n - mean * mean);
    const std = Math.max(this.options.stdDevMsMin, Math.sqrt(variance));
    return phiOf(nowMs - this.lastMs, mean, std);
  }
}

/** Phi of a silence of `elapsedMs` against intervals of mean `mean` and deviation `std`. */
export function phiOf(elapsedMs: number, mean: number, std: number): number {
  const y = (elapsedMs - mean) / std;
  const e = Math.exp(-y * (1.5976 + 0.070566 * y * y));
  const phi = elapsedMs > mean ? -Math.log10(e / (1 + e)) : -Math.log10(1 - 1 / (1 + e));
  if (!Number.isFinite(phi)) return PHI_REPORTED_MAX;
  return Math.min(PHI_REPORTED_MAX, Math.max(0, phi));
}
