/**
 * The producer's memory bound: records waiting to be sent hold bytes of a fixed budget
 * (`bufferBytesMax`) from `send` until their batch is answered. When the budget is spent, a send
 * waits up to `maxBlockMs` for bytes to come back (FIFO, so a large send is not starved by small
 * ones) and then fails with BUFFER_FULL; with the `fail` policy it fails at once.
 */
import { EdgeqError, systemClock, type Clock, type TimerHandle } from '../core/index.ts';

/** What a send does when the buffer is full. */
export type BufferFullPolicy = 'wait' | 'fail';

/** Options of a budget. */
export interface BufferBudgetOptions {
  bufferBytesMax: number;
  /** Longest wait for bytes under the `wait` policy. */
  maxBlockMs: number;
  policy?: BufferFullPolicy;
  /** Sends allowed to wait at once; one more fails with BUFFER_FULL at once. */
  waitersMax?: number;
  clock?: Clock;
}

interface Waiter {
  bytes: number;
  resolve: () => void;
  reject: (err: EdgeqError) => void;
  timer: TimerHandle;
}

const WAITERS_MAX_DEFAULT = 10_000;

/** A byte budget with FIFO waiters. */
export class BufferBudget {
  readonly bufferBytesMax: number;
  private readonly maxBlockMs: number;
  private readonly policy: BufferFullPolicy;
  private readonly waitersMax: number;
  private readonly clock: Clock;
  private used = 0;
  private readonly waiters: Waiter[] = [];

  constructor(options: BufferBudgetOptions) {
    this.bufferBytesMax = options.bufferBytesMax;
    this.maxBlockMs = options.maxBlockMs;
    this.policy = options.policy ?? 'wait';
    this.waitersMax = options.waitersMax ?? WAITERS_MAX_DEFAULT;
    this.clock = options.clock ?? systemClock;
  }

  /** Bytes currently held. */
  get usedBytes(): number {
    return this.used;
  }

  /** Sends waiting for bytes. */
  get waiting(): number {
    return this.waiters.length;
  }

  /** Takes `bytes` from the budget, waiting per the policy; BUFFER_FULL when they do not come. */
  acquire(bytes: number): Promise<void> {
    if (bytes > this.bufferBytesMax) {
      return Promise.reject(new EdgeqError('MESSAGE_TOO_LARGE', `${bytes} bytes can never fit the producer buffer of ${this.bufferBytesMax}`, {
        details: { bytes, bufferBytesMax: this.bufferBytesMax },
      }));
    }
    if (this.waiters.length === 0 && this.used + bytes <= this.bufferBytesMax) {
      this.used += bytes;
      return Promise.resolve();
    }
    if (this.policy === 'fail' || this.maxBlockMs <= 0 || this.waiters.length >= this.waitersMax) {
      return Promise.reject(this.fullError(bytes));
    }
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        bytes,
        resolve,
        reject,
        timer: this.clock.setTimeout(() => {
          const i = this.waiters.indexOf(waiter);
          if (i >= 0) this.waiters.splice(i, 1);
          reject(this.fullError(bytes));
          // The head may have been the one blocking smaller sends behind it.
          this.grant();
        }, this.maxBlockMs),
      };
      this.waiters.push(waiter);
    });
  }

  /** Returns bytes to the budget and wakes waiters that now fit. */
  release(bytes: number): void {
    this.used = Math.max(0, this.used - bytes);
    this.grant();
  }

  /** Fails every waiter (the producer is closing). */
  failWaiters(err: EdgeqError): void {
    for (const w of this.waiters.splice(0)) {
      w.timer.cancel();
      w.reject(err);
    }
  }

  private grant(): void {
    for (;;) {
      const head = this.waiters[0];
      if (!head || this.used + head.bytes > this.bufferBytesMax) return;
      this.waiters.shift();
      head.timer.cancel();
      this.used += head.bytes;
      head.resolve();
    }
  }

  private fullError(bytes: number): EdgeqError {
    return new EdgeqError('BUFFER_FULL', `producer buffer full: ${this.used} of ${this.bufferBytesMax} bytes held, ${bytes} more needed`, {
      details: { usedBytes: this.used, bufferBytesMax: this.bufferBytesMax, bytes },
    });
  }
}
