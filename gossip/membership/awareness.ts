/**
 * Lifeguard's local health multiplier (LHM; Dadgar et al. 2018, section 4.1; memberlist's
 * awareness.go). A member that misses its own acks, misses the nacks its ping-req peers owe it, or
 * has to refute suspicions about itself is more likely slow itself than surrounded by failures, so
 * it waits longer before it accuses anyone: its probe interval and probe timeout are multiplied by
 * `score + 1`. A successful probe lowers the score by one. The score stays in [0, lhmMax - 1], so
 * the longest wait is lhmMax × the configured one.
 */
import { assert } from '../../src/core/index.ts';

/** The health score of this member (0 is healthy). */
export class Awareness {
  private score = 0;

  constructor(private readonly lhmMax: number) {
    assert(Number.isInteger(lhmMax) && lhmMax >= 1, 'lhmMax must be a positive integer');
  }

  /** The current score, 0 … lhmMax - 1. */
  get health(): number {
    return this.score;
  }

  /** The multiplier applied to probe intervals and timeouts: score + 1. */
  get multiplier(): number {
    return this.score + 1;
  }

  /** Moves the score by `delta` (positive: less healthy), kept within its bounds. */
  apply(delta: number): void {
    this.score = Math.min(this.lhmMax - 1, Math.max(0, this.score + delta));
  }

  /** `ms` stretched by the multiplier. */
  scale(ms: number): number {
    return ms * (this.score + 1);
  }
}
