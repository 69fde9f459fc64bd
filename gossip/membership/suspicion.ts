/**
 * A suspicion's timer, with Lifeguard's dynamic timeout (Dadgar et al. 2018, section 4.2;
 * memberlist's suspicion.go). It starts at `max` and shrinks as independent members confirm the
 * suspicion, down to `min` once `k` have:
 *
 *   timeout(C) = max(min, max − (max − min) · log(C + 1) / log(k + 1))
 *
 * where C is the number of confirmations so far (memberlist remainingSuspicionTime). With no
 * confirmation expected (k < 1) it is `min` from the start. The member that raised the suspicion
 * does not count as a confirmation of it.
 */
import type { Clock, TimerHandle } from '../../src/core/index.ts';

/** memberlist's suspicion timeout (state.go suspicionTimeout): mult × max(1, log10(n)) × probe interval. */
export function suspicionTimeoutMs(suspicionMult: number, members: number, probeIntervalMs: number): number {
  const nodeScale = Math.max(1, Math.log10(Math.max(1, members)));
  return Math.floor(suspicionMult * nodeScale * probeIntervalMs);
}

/** The timeout after `confirmations` of `k` expected (memberlist remainingSuspicionTime, before elapsed). */
export function dynamicTimeoutMs(confirmations: number, k: number, minMs: number, maxMs: number): number {
  if (k < 1) return minMs;
  const frac = Math.log(confirmations + 1) / Math.log(k + 1);
  return Math.max(minMs, Math.floor(maxMs - frac * (maxMs - minMs)));
}

/** One running suspicion of one member at one incarnation. */
export class Suspicion {
  private readonly confirmedBy = new Set<string>();
  private readonly startMs: number;
  private timer: TimerHandle;
  private fired = false;

  constructor(
    private readonly clock: Clock,
    from: string,
    private readonly k: number,
    private readonly minMs: number,
    private readonly maxMs: number,
    private readonly onTimeout: () => void,
  ) {
    this.startMs = clock.monotonicMs();
    this.confirmedBy.add(from);
    this.timer = clock.setTimeout(() => this.fire(), k < 1 ? minMs : maxMs);
  }

  /** Independent confirmations counted so far (the raiser excluded). */
  get confirmations(): number {
    return this.confirmedBy.size - 1;
  }

  /** The total timeout as it stands now, from the start. */
  get timeoutMs(): number {
    return dynamicTimeoutMs(this.confirmations, this.k, this.minMs, this.maxMs);
  }

  /**
   * Counts `from` as confirming; true when it is new and shortened the timer (the caller then
   * re-gossips it so others shorten theirs). Past `k` confirmations nothing more changes.
   */
  confirm(from: string): boolean {
    if (this.fired || this.k < 1 || this.confirmations >= this.k || this.confirmedBy.has(from)) return false;
    this.confirmedBy.add(from);
    const remaining = this.timeoutMs - (this.clock.monotonicMs() - this.startMs);
    this.timer.cancel();
    this.timer = this.clock.setTimeout(() => this.fire(), Math.max(0, remaining));
    return true;
  }

  /** Stops the timer (refuted, or the member is gone). */
  cancel(): void {
    this.fired = true;
    this.timer.cancel();
  }

  private fire(): void {
    if (this.fired) return;
    this.fired = true;
    this.onTimeout();
  }
}
