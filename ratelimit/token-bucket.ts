/**
 * A token bucket refilled lazily on use (no timer per key), whose balance may go below zero: a
 * request larger than what is left is let through or refused by the caller's rule, and the time
 * until the balance is back at zero is the throttle time (the design of Pulsar's PIP-322
 * AsyncTokenBucket). A burst bounds the balance from above.
 *
 * Exact over any run: the balance is kept in thousandths of a token as an integer, and the refill
 * adds `rate` thousandths per whole millisecond, carrying the unused fraction of a millisecond, so
 * a day of refills adds exactly rate × 86,400 tokens (no float drift). Rates and bursts are
 * integers (records/s, bytes/s), which the quota parser enforces.
 */
import type { Clock } from '../src/core/index.ts';

/** Thousandths of a token per token. */
const MILLI = 1000;

export interface BucketSpec {
  /** Tokens per second (an integer ≥ 1). */
  ratePerSec: number;
  /** Most tokens the bucket holds (an integer ≥ 1): the burst. */
  burst: number;
}

/** What taking from the bucket said. */
export interface TakeResult {
  /** True when the tokens were there (the balance stayed at or above zero). */
  ok: boolean;
  /** Milliseconds until the balance is back at zero (0 when ok). */
  throttleMs: number;
}

export class TokenBucket {
  private balanceMilli: number;
  private lastMs: number;

  constructor(
    private spec: BucketSpec,
    private readonly clock: Clock,
  ) {
    this.balanceMilli = spec.burst * MILLI;
    this.lastMs = Math.floor(clock.monotonicMs());
  }

  /** Changes the rate and burst; the balance is kept (capped at the new burst). */
  reconfigure(spec: BucketSpec): void {
    this.refill();
    this.spec = spec;
    this.balanceMilli = Math.min(this.balanceMilli, spec.burst * MILLI);
  }

  /** Tokens now (may be negative). */
  balance(): number {
    this.refill();
    return this.balanceMilli / MILLI;
  }

  /**
   * Takes `n` tokens if the request fits now, otherwise takes nothing and says how long to wait.
   * It fits when the balance holds `min(n, burst)`: a request larger than the burst is let through
   * on a full bucket and leaves it in debt (the balance goes negative, PIP-322's design), so the
   * rate still holds over time and a large request is not refused for ever.
   */
  tryTake(n: number): TakeResult {
    const t = this.peek(n);
    if (t.ok) this.balanceMilli -= n * MILLI;
    return t;
  }

  /** Whether `n` tokens would be taken now (see tryTake), without taking them. */
  peek(n: number): TakeResult {
    this.refill();
    const need = Math.min(n, this.spec.burst) * MILLI;
    if (this.balanceMilli >= need) return { ok: true, throttleMs: 0 };
    return { ok: false, throttleMs: this.msUntil(need) };
  }

  /**
   * Takes `n` tokens whatever the balance (it may go negative), as for a request already served;
   * says how long until the balance is back at zero.
   */
  take(n: number): TakeResult {
    this.refill();
    this.balanceMilli -= n * MILLI;
    if (this.balanceMilli >= 0) return { ok: true, throttleMs: 0 };
    return { ok: false, throttleMs: this.msUntil(0) };
  }

  /** Milliseconds until the balance reaches `targetMilli`. */
  private msUntil(targetMilli: number): number {
    const missing = targetMilli - this.balanceMilli;
    return missing <= 0 ? 0 : Math.ceil(missing / this.spec.ratePerSec);
  }

  private refill(): void {
    const now = Math.floor(this.clock.monotonicMs());
    const elapsed = now - this.lastMs;
    if (elapsed <= 0) return;
    this.lastMs = now;
    const cap = this.spec.burst * MILLI;
    if (this.balanceMilli >= cap) return;
    // rate tokens/s = rate thousandths per ms: an exact integer step.
    this.balanceMilli = Math.min(cap, this.balanceMilli + elapsed * this.spec.ratePerSec);
  }
}
