/**
 * The bandwidth of a directed link: a token bucket that may go into debt. Every datagram and TCP
 * piece that crosses the link reserves its bytes and is told how long to wait; a reservation made
 * while the bucket is in debt waits for all the earlier ones, so the link drains its traffic in
 * arrival order at its rate, like the serialisation of a real bottleneck. One bucket per link,
 * shared by all its routes and connections.
 */
import type { Clock } from '../core/index.ts';

/** A token bucket of `rate` bytes per second with a burst of `burstMs` of that rate. */
export class Pacer {
  private rateBytesPerSec = 0;
  private tokens = 0;
  private lastMs: number;

  constructor(
    private readonly clock: Clock,
    private readonly burstMs: number,
  ) {
    this.lastMs = clock.monotonicMs();
  }

  /** Bytes the bucket holds when full. */
  private get burstBytes(): number {
    return (this.rateBytesPerSec * this.burstMs) / 1000;
  }

  /** Changes the rate (0: unlimited, which also forgives any debt); a bucket that was unlimited starts empty. */
  setRate(bytesPerSec: number): void {
    if (bytesPerSec === this.rateBytesPerSec) return;
    this.refill();
    this.rateBytesPerSec = bytesPerSec;
    // Debt taken at the old rate is kept (those bytes are still on the wire), but a rate of 0
    // means no bottleneck at all, and a new rate never starts with more than one burst saved.
    this.tokens = bytesPerSec === 0 ? 0 : Math.min(this.tokens, this.burstBytes);
  }

  private refill(): void {
    const now = this.clock.monotonicMs();
    if (this.rateBytesPerSec > 0) this.tokens = Math.min(this.burstBytes, this.tokens + ((now - this.lastMs) * this.rateBytesPerSec) / 1000);
    this.lastMs = now;
  }

  /** Takes `bytes` from the bucket and returns how many ms they must wait before leaving (0 when unlimited). */
  reserve(bytes: number): number {
    if (this.rateBytesPerSec === 0) return 0;
    this.refill();
    this.tokens -= bytes;
    return this.tokens >= 0 ? 0 : (-this.tokens * 1000) / this.rateBytesPerSec;
  }
}
