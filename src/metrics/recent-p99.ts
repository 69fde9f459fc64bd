/**
 * The p99 of the durations seen in the last few seconds, for a figure other processes poll (the
 * broker's fsync p99, which the gateways' load controllers read through CellStatus). Unlike the
 * Prometheus histogram it is not cumulative, and unlike a histogram reset on read it serves any
 * number of readers: a ring of the last RECENT_SAMPLES_MAX samples with their times, of which the
 * ones younger than the window count. At 1024 samples the ring covers the window up to ~100
 * fsyncs/s per 10 s; beyond, it covers the most recent 1024, still a fair picture of "now".
 */

/** Samples the ring keeps (16 KiB). */
export const RECENT_SAMPLES_MAX = 1024;
/** Samples older than this do not count (a few control intervals). */
export const RECENT_WINDOW_MS = 5_000;

export class RecentP99 {
  private readonly values = new Float64Array(RECENT_SAMPLES_MAX);
  private readonly times = new Float64Array(RECENT_SAMPLES_MAX);
  private next = 0;
  private size = 0;

  constructor(private readonly nowMs: () => number = () => performance.now()) {}

  record(durationMs: number): void {
    if (!Number.isFinite(durationMs) || durationMs < 0) return;
    this.values[this.next] = durationMs;
    this.times[this.next] = this.nowMs();
    this.next = (this.next + 1) % RECENT_SAMPLES_MAX;
    if (this.size < RECENT_SAMPLES_MAX) this.size++;
  }

  /** The p99 (nearest rank) of the samples of the last `windowMs`; 0 when there were none. */
  p99(windowMs = RECENT_WINDOW_MS): number {
    const since = this.nowMs() - windowMs;
    const recent: number[] = [];
    for (let i = 0; i < this.size; i++) if (this.times[i]! >= since) recent.push(this.values[i]!);
    if (recent.length === 0) return 0;
    recent.sort((a, b) => a - b);
    return recent[Math.min(recent.length - 1, Math.ceil(recent.length * 0.99) - 1)]!;
  }
}
