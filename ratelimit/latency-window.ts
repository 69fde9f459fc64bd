/**
 * Latencies of one control interval, for its p99: a bounded reservoir (Vitter's algorithm R), so a
 * gateway answering 100 000 requests a second keeps LATENCY_SAMPLES_MAX numbers, not 100 000, and
 * every request of the interval has the same chance to be among them (the p99 stays unbiased).
 * At 2048 samples the p99 is the 21st largest: its rank error is about ±√(2048·0.01) ≈ ±4.5 ranks.
 */

/** Samples kept per interval (16 KiB of doubles). */
export const LATENCY_SAMPLES_MAX = 2048;

export class LatencyWindow {
  private readonly samples = new Float64Array(LATENCY_SAMPLES_MAX);
  private kept = 0;
  private seen = 0;

  constructor(private readonly random: () => number = Math.random) {}

  /** One request's latency (ms). Non-finite or negative values are a caller's bug and are dropped. */
  record(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) return;
    this.seen++;
    if (this.kept < LATENCY_SAMPLES_MAX) {
      this.samples[this.kept++] = ms;
      return;
    }
    // Keep the n-th sample with probability max/n, in place of a uniformly chosen one.
    const slot = Math.floor(this.random() * this.seen);
    if (slot < LATENCY_SAMPLES_MAX) this.samples[slot] = ms;
  }

  /** Requests recorded since the last `drain`. */
  count(): number {
    return this.seen;
  }

  /** The p99 of the interval (0 when nothing was recorded), and starts the next interval. */
  drain(): number {
    const n = this.kept;
    let p99 = 0;
    if (n > 0) {
      const sorted = this.samples.slice(0, n).sort();
      // Nearest rank: the smallest value with at least 99% of the samples at or below it.
      p99 = sorted[Math.min(n - 1, Math.ceil(n * 0.99) - 1)]!;
    }
    this.kept = 0;
    this.seen = 0;
    return p99;
  }
}
