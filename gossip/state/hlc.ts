/**
 * Versions of the mesh state: a hybrid logical clock (Kulkarni et al. 2014, "Logical Physical
 * Clocks") packed into one number, `wall ms × 1000 + counter`. A local write gets
 * max(last + 1, now × 1000): it follows wall time when time moves, and still increases when
 * writes come faster than one per ms or the wall clock steps back (the counter then carries into
 * the ms digits, a logical tick). Versions learned from others are observed, so a later local
 * write orders after everything this member has seen. 2^53 / 1000 ms reaches the year 2255.
 */
import type { Clock } from '../../src/core/index.ts';

/** Counter values per ms packed below the wall-clock digits. */
export const HLC_COUNTERS_PER_MS = 1000;

/** The wall-clock ms part of a version. */
export function versionWallMs(version: number): number {
  return Math.floor(version / HLC_COUNTERS_PER_MS);
}

/** True when the write (aVersion, aMember) wins over (bVersion, bMember): last writer wins, then the greater member id. */
export function versionWins(aVersion: number, aMember: string, bVersion: number, bMember: string): boolean {
  return aVersion > bVersion || (aVersion === bVersion && aMember > bMember);
}

/** One member's hybrid logical clock. */
export class HybridClock {
  private last = 0;

  constructor(private readonly clock: Clock) {}

  /** A version for a local write, greater than every version issued or observed. */
  tick(): number {
    // Whole ms: a clock may report fractions (a simulated one does), and versions are integers.
    this.last = Math.max(this.last + 1, Math.floor(this.clock.nowMs()) * HLC_COUNTERS_PER_MS);
    return this.last;
  }

  /** Learns a version written elsewhere. */
  observe(version: number): void {
    if (version > this.last) this.last = version;
  }
}
