/**
 * Keeps one broker's watch on its cell's keys alive, and says whether the broker's view is
 * current. A broker whose watch broke no longer sees leadership changes: it must not take writes
 * (it would be a zombie leader) until the watch is back and caught up. So:
 *
 * - `start()` makes the view from scratch: a watch from now (its events held back), then a full
 *   read, then the held events newer than anything in the read. The read is one revision of the
 *   store, so events at or below its newest key add nothing, and the rest follow in order.
 * - When the watch breaks (`onError`), the view is not current from that moment. The watch is
 *   re-established with capped exponential backoff, from the last revision seen (one earlier, in
 *   case that revision was cut in two; the view drops what it already has). The view is current
 *   again only once a write made after the new watch started (the barrier: the broker re-puts its
 *   own key) comes back through it, since a watch delivers in revision order. If the last
 *   revision seen was compacted away, the view is made from scratch as at start.
 */
import { EdgeqError, toEdgeqError, type Clock, type Logger, type TimerHandle } from '../../src/core/index.ts';
import { isCompactedError, type Arbiter, type KeyValue, type Watch, type WatchEvent } from '../arbiter/index.ts';

/** First wait before re-establishing a broken watch. */
export const WATCH_RETRY_MS_MIN_DEFAULT = 100;
/** Longest wait between attempts: a few per lease TTL, so a healed arbiter is found quickly. */
export const WATCH_RETRY_MS_MAX_DEFAULT = 2_000;
/** How long the barrier write may take to come back through the new watch before the attempt is abandoned. */
export const WATCH_CATCH_UP_MS_MAX_DEFAULT = 5_000;
/**
 * Events held back while the full read runs. The read takes one round trip; a cell writes a few
 * events per second, so 10 000 (the memory arbiter's history) means something is badly wrong.
 */
export const WATCH_HELD_EVENTS_MAX = 10_000;

/** Settings and callbacks of a CellWatch. */
export interface CellWatchOptions {
  arbiter: Arbiter;
  prefix: string;
  clock: Clock;
  logger: Logger;
  retryMsMin?: number;
  retryMsMax?: number;
  catchUpMsMax?: number;
  /** One key's change, in revision order (may repeat a revision after a resume). */
  onEvent(key: string, value: Buffer | null, modRevision: number): void;
  /** A full read of the prefix, which replaces the view. */
  onSnapshot(kvs: KeyValue[]): void;
  /** A write under the prefix; resolves with its revision. */
  barrier(): Promise<number>;
  /** The view stopped (false) or started again (true) being current. */
  onCurrentChange(current: boolean): void;
}

/** The watch of one broker's cell controller. */
export class CellWatch {
  private readonly retryMsMin: number;
  private readonly retryMsMax: number;
  private readonly catchUpMsMax: number;
  private watch: Watch | null = null;
  /** Bumped by every break and close: an attempt or a watch of an older generation is stale. */
  private generation = 0;
  private lastRevision = 0;
  private current = false;
  private retryMs: number;
  private retryTimer: TimerHandle | null = null;
  /** An attempt to re-establish is running; it schedules the next one itself if it fails. */
  private attempting = false;
  private closed = false;
  private catchUp: { revision: number; resolve: () => void } | null = null;

  constructor(private readonly o: CellWatchOptions) {
    this.retryMsMin = o.retryMsMin ?? WATCH_RETRY_MS_MIN_DEFAULT;
    this.retryMsMax = o.retryMsMax ?? WATCH_RETRY_MS_MAX_DEFAULT;
    this.catchUpMsMax = o.catchUpMsMax ?? WATCH_CATCH_UP_MS_MAX_DEFAULT;
    if (this.retryMsMin < 1 || this.retryMsMax < this.retryMsMin) {
      throw new EdgeqError('INVALID_CONFIG', `watch retry bounds must satisfy 1 <= min (${this.retryMsMin}) <= max (${this.retryMsMax})`);
    }
    this.retryMs = this.retryMsMin;
  }

  /** True while the watch is up and has delivered everything up to a point after it started. */
  get isCurrent(): boolean {
    return this.current && !this.closed;
  }

  /** Builds the view from a full read and starts following it. */
  async start(): Promise<void> {
    try {
      this.watch = await this.fromScratch(this.generation);
    } catch (err) {
      // The caller's start fails as a whole; nothing is left retrying behind it.
      this.retryTimer?.cancel();
      throw err;
    }
    this.setCurrent(true);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.generation++;
    this.retryTimer?.cancel();
    this.catchUp?.resolve();
    await this.watch?.close().catch(() => undefined);
    this.watch = null;
  }

  private setCurrent(current: boolean): void {
    if (this.current === current) return;
    this.current = current;
    this.o.onCurrentChange(current);
  }

  private deliver(gen: number, e: WatchEvent): void {
    if (gen !== this.generation) return;
    if (e.modRevision > this.lastRevision) this.lastRevision = e.modRevision;
    this.o.onEvent(e.key, e.type === 'put' ? e.value : null, e.modRevision);
    if (this.catchUp && this.lastRevision >= this.catchUp.revision) this.catchUp.resolve();
  }

  private broken(gen: number, err: Error): void {
    if (gen !== this.generation || this.closed) return;
    this.generation++;
    this.o.logger.warn({ code: toEdgeqError(err).code, err: err.message, lastRevision: this.lastRevision }, 'arbiter watch broke: not taking writes until it is back and caught up');
    this.setCurrent(false);
    const old = this.watch;
    this.watch = null;
    void old?.close().catch(() => undefined);
    this.catchUp?.resolve();
    if (!this.attempting) this.scheduleRetry();
  }

  /**
   * Tries to re-establish a broken watch now instead of after its backoff (the broker just
   * registered again, so the barrier write can succeed).
   */
  retryNow(): void {
    if (this.closed || this.current || this.attempting || this.retryTimer === null) return;
    this.retryTimer.cancel();
    this.retryTimer = null;
    this.retryMs = this.retryMsMin;
    void this.reestablish();
  }

  private scheduleRetry(): void {
    if (this.closed) return;
    this.retryTimer?.cancel();
    const delay = this.retryMs;
    this.retryMs = Math.min(this.retryMsMax, this.retryMs * 2);
    this.retryTimer = this.clock.setTimeout(() => {
      this.retryTimer = null;
      void this.reestablish();
    }, delay);
  }

  private get clock(): Clock {
    return this.o.clock;
  }

  private async reestablish(): Promise<void> {
    if (this.closed || this.attempting) return;
    this.attempting = true;
    const gen = this.generation;
    let watch: Watch | null = null;
    try {
      try {
        watch = await this.resume(gen);
      } catch (err) {
        if (!isCompactedError(err)) throw err;
        this.o.logger.info({ lastRevision: this.lastRevision }, 'the watch\'s last revision was compacted: reading the whole cell again');
        watch = await this.fromScratch(gen);
      }
      if (gen !== this.generation) throw new EdgeqError('ARBITER_UNAVAILABLE', 'the new watch broke while catching up');
      this.watch = watch;
      this.retryMs = this.retryMsMin;
      this.o.logger.info({ lastRevision: this.lastRevision }, 'arbiter watch back and caught up');
      this.setCurrent(true);
    } catch (err) {
      await watch?.close().catch(() => undefined);
      if (this.closed) return;
      this.o.logger.warn({ code: toEdgeqError(err).code, err: (err as Error).message }, 'could not re-establish the arbiter watch; retrying');
      // A break of the half-made watch already moved the generation on; either way, try again.
      if (gen === this.generation) this.generation++;
      this.scheduleRetry();
    } finally {
      this.attempting = false;
    }
  }

  /** A watch from just before the last revision seen, caught up through a barrier write. */
  private async resume(gen: number): Promise<Watch> {
    const watch = await this.o.arbiter.watchPrefix(this.o.prefix, (e) => this.deliver(gen, e), {
      fromRevision: Math.max(0, this.lastRevision - 1),
      onError: (err) => this.broken(gen, err),
    });
    try {
      const revision = await this.o.barrier();
      await this.waitDelivered(gen, revision);
      return watch;
    } catch (err) {
      await watch.close().catch(() => undefined);
      throw err;
    }
  }

  private waitDelivered(gen: number, revision: number): Promise<void> {
    if (this.lastRevision >= revision) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const timer = this.clock.setTimeout(() => {
        this.catchUp = null;
        reject(new EdgeqError('ARBITER_UNAVAILABLE', `the watch did not deliver revision ${revision} within ${this.catchUpMsMax} ms`));
      }, this.catchUpMsMax);
      this.catchUp = {
        revision,
        resolve: () => {
          timer.cancel();
          this.catchUp = null;
          if (gen === this.generation && !this.closed) resolve();
          else reject(new EdgeqError('ARBITER_UNAVAILABLE', 'the watch broke while catching up'));
        },
      };
    });
  }

  /** A watch from now with its events held back, a full read, then the held events newer than the read. */
  private async fromScratch(gen: number): Promise<Watch> {
    let held: WatchEvent[] | null = [];
    const watch = await this.o.arbiter.watchPrefix(
      this.o.prefix,
      (e) => {
        if (held === null) return this.deliver(gen, e);
        if (held.length >= WATCH_HELD_EVENTS_MAX) return this.broken(gen, new EdgeqError('ARBITER_UNAVAILABLE', `more than ${WATCH_HELD_EVENTS_MAX} events arrived during the full read`));
        held.push(e);
      },
      { onError: (err) => this.broken(gen, err) },
    );
    try {
      const kvs = await this.o.arbiter.getPrefix(this.o.prefix);
      if (gen !== this.generation) throw new EdgeqError('ARBITER_UNAVAILABLE', 'the watch broke during the full read');
      const newest = kvs.reduce((m, kv) => Math.max(m, kv.modRevision), 0);
      this.o.onSnapshot(kvs);
      this.lastRevision = Math.max(this.lastRevision, newest);
      const late = held.filter((e) => e.modRevision > newest);
      held = null;
      for (const e of late) this.deliver(gen, e);
      return watch;
    } catch (err) {
      held = null;
      await watch.close().catch(() => undefined);
      throw err;
    }
  }
}
