/**
 * The budget of one source link: a bandwidth limit (a token bucket in bytes) and a bound on bytes
 * in flight, shared fairly by the partitions that fetch over it.
 *
 * A fetch asks before it goes out and settles with the bytes it really brought. The size of a
 * fetch's answer is only known afterwards, so the bucket is debited then and may go below zero;
 * the next fetch waits until it is back above. Over any stretch longer than a fetch this holds the
 * rate to the limit, and it never holds a fetch back for bytes that did not come.
 *
 * Fairness: each partition's replicator has at most one fetch asking at a time, and waiters are
 * served first come, first served, so the link turns round-robin over the partitions that want it;
 * each grant is also capped at an equal share of the in-flight bound, so a partition catching up
 * after a partition cannot take the whole link from one that only carries new records.
 */
import type { Clock, TimerHandle } from '../../src/core/index.ts';
import { EdgeqError } from '../../src/core/index.ts';

/** The smallest grant: below this a fetch would cost more in round trips than it moves. */
export const LINK_GRANT_BYTES_MIN = 16 * 1024;

export interface LinkGrant {
  /** Bytes this fetch may ask for. */
  readonly maxBytes: number;
}

interface Waiter {
  key: string;
  wanted: number;
  resolve: (g: LinkGrant) => void;
  reject: (e: unknown) => void;
  onAbort?: () => void;
  signal?: AbortSignal;
}

export class LinkBudget {
  private tokens: number;
  private lastRefillMs: number;
  private inflight = 0;
  private readonly active = new Set<string>();
  private readonly waiters: Waiter[] = [];
  private timer: TimerHandle | null = null;
  /** Bytes settled over the link's life (its throughput, for metrics). */
  bytesTotal = 0;

  constructor(
    private readonly clock: Clock,
    /** Bytes per second; 0 is no limit. */
    private readonly rateBytesPerSec: number,
    private readonly inflightBytesMax: number,
  ) {
    // A burst of a tenth of a second: enough to start a fetch at once after idling, small enough
    // that the limit holds over a second.
    this.tokens = this.burst();
    this.lastRefillMs = clock.monotonicMs();
  }

  private burst(): number {
    return this.rateBytesPerSec > 0 ? Math.max(LINK_GRANT_BYTES_MIN, this.rateBytesPerSec / 10) : Infinity;
  }

  /** Partitions that fetch over this link (the fair share divides among them). */
  register(key: string): void {
    this.active.add(key);
  }

  unregister(key: string): void {
    this.active.delete(key);
  }

  /** Resolves when a fetch for `key` may go out, with how many bytes it may ask for. */
  acquire(key: string, wanted: number, signal?: AbortSignal): Promise<LinkGrant> {
    if (signal?.aborted) return Promise.reject(aborted());
    return new Promise<LinkGrant>((resolve, reject) => {
      const w: Waiter = { key, wanted, resolve, reject, ...(signal ? { signal } : {}) };
      if (signal) {
        w.onAbort = () => {
          const i = this.waiters.indexOf(w);
          if (i >= 0) this.waiters.splice(i, 1);
          reject(aborted());
        };
        signal.addEventListener('abort', w.onAbort, { once: true });
      }
      this.waiters.push(w);
      this.pump();
    });
  }

  /** The fetch of `grant` is over: `usedBytes` came over the link (0 when it failed). */
  settle(grant: LinkGrant, usedBytes: number): void {
    this.inflight -= grant.maxBytes;
    this.refill();
    if (this.rateBytesPerSec > 0) this.tokens -= usedBytes;
    this.bytesTotal += usedBytes;
    this.pump();
  }

  /** Fails every waiter (the exchange stops). */
  close(): void {
    this.timer?.cancel();
    this.timer = null;
    for (const w of this.waiters.splice(0)) {
      if (w.onAbort) w.signal?.removeEventListener('abort', w.onAbort);
      w.reject(aborted());
    }
  }

  private share(): number {
    return Math.max(LINK_GRANT_BYTES_MIN, Math.floor(this.inflightBytesMax / Math.max(1, this.active.size)));
  }

  private refill(): void {
    const now = this.clock.monotonicMs();
    if (this.rateBytesPerSec > 0) this.tokens = Math.min(this.burst(), this.tokens + ((now - this.lastRefillMs) * this.rateBytesPerSec) / 1000);
    this.lastRefillMs = now;
  }

  private pump(): void {
    this.refill();
    while (this.waiters.length > 0) {
      if (this.tokens <= 0) {
        this.wakeAfter(Math.ceil(((1 - this.tokens) * 1000) / this.rateBytesPerSec));
        return;
      }
      const w = this.waiters[0]!;
      // With a limit, a grant is also capped by what the bucket holds now (at least the minimum),
      // so one large grant cannot put the link a whole fetch over its rate.
      const cap = this.rateBytesPerSec > 0 ? Math.max(LINK_GRANT_BYTES_MIN, Math.floor(this.tokens)) : Infinity;
      const maxBytes = Math.max(1, Math.min(w.wanted, this.share(), cap));
      if (this.inflight > 0 && this.inflight + maxBytes > this.inflightBytesMax) return; // settle() pumps again
      this.waiters.shift();
      if (w.onAbort) w.signal?.removeEventListener('abort', w.onAbort);
      this.inflight += maxBytes;
      w.resolve({ maxBytes });
    }
  }

  private wakeAfter(ms: number): void {
    if (this.timer) return;
    this.timer = this.clock.setTimeout(() => {
      this.timer = null;
      this.pump();
    }, Math.max(1, ms));
  }
}

function aborted(): EdgeqError {
  return new EdgeqError('CONNECTION_CLOSED', 'the exchange stopped', { retriable: false });
}
