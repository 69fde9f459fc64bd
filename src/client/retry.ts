/**
 * Retries with exponential backoff and full jitter (the AWS architecture blog's "full jitter"):
 * the n-th wait is random(0, min(cap, base * 2^n)). Full jitter spreads clients that failed
 * together (a broker restart) so they do not come back in lockstep.
 *
 * Only errors whose `retriable` flag is set are retried, and both the number of attempts and the
 * total time are bounded.
 */
import { EdgeqError, systemClock, toEdgeqError, type Clock } from '../core/index.ts';

/** Bounds and sources of randomness and time for `retry`. */
export interface RetryOptions {
  /** Retries after the first attempt; 0 means one attempt only. */
  retriesMax?: number;
  /** Base of the exponential backoff. */
  retryBackoffMs?: number;
  /** Cap on one backoff. */
  retryBackoffMsMax?: number;
  /** Bound on the whole operation, waits included: no retry starts after it. */
  retryTimeMsMax?: number;
  /** Returns a number in [0, 1); injected so tests can pin the jitter. */
  random?: () => number;
  clock?: Clock;
  /** Overrides the `retriable` flag as the test of whether to retry. */
  isRetriable?: (err: EdgeqError) => boolean;
  /** Called before each wait, e.g. to mark metadata stale. */
  onRetry?: (err: EdgeqError, attempt: number, delayMs: number) => void;
}

/** Defaults of `RetryOptions`. */
export const RETRY_DEFAULTS = {
  retriesMax: 5,
  retryBackoffMs: 100,
  retryBackoffMsMax: 1_000,
  retryTimeMsMax: 30_000,
} as const;

/** The full-jitter wait before retry number `attempt` (0 for the first retry). */
export function backoffDelayMs(attempt: number, options: Pick<RetryOptions, 'retryBackoffMs' | 'retryBackoffMsMax' | 'random'> = {}): number {
  const base = options.retryBackoffMs ?? RETRY_DEFAULTS.retryBackoffMs;
  const cap = options.retryBackoffMsMax ?? RETRY_DEFAULTS.retryBackoffMsMax;
  const random = options.random ?? Math.random;
  // 2^attempt overflows to Infinity for large attempts; min() with the cap keeps it finite.
  const ceiling = Math.min(cap, base * 2 ** Math.min(attempt, 52));
  return Math.floor(random() * ceiling);
}

/** Resolves after `ms` on the given clock. */
export function sleep(ms: number, clock: Clock = systemClock): Promise<void> {
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve) => clock.setTimeout(resolve, ms));
}

/**
 * Runs `fn` until it succeeds, fails with a non-retriable error, or the attempt or time bound is
 * reached; then throws the last error. `fn` receives the attempt number (0 first).
 */
export async function retry<T>(fn: (attempt: number) => Promise<T>, options: RetryOptions = {}): Promise<T> {
  const clock = options.clock ?? systemClock;
  const retriesMax = options.retriesMax ?? RETRY_DEFAULTS.retriesMax;
  const timeMax = options.retryTimeMsMax ?? RETRY_DEFAULTS.retryTimeMsMax;
  const isRetriable = options.isRetriable ?? ((e: EdgeqError) => e.retriable);
  const started = clock.monotonicMs();
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (raw) {
      const err = toEdgeqError(raw);
      if (!isRetriable(err) || attempt >= retriesMax) throw err;
      const delayMs = backoffDelayMs(attempt, options);
      if (clock.monotonicMs() - started + delayMs >= timeMax) throw err;
      options.onRetry?.(err, attempt, delayMs);
      await sleep(delayMs, clock);
    }
  }
}
