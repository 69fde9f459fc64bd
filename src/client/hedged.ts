/**
 * Bounded waits for a client that must not stall on one silent broker. A SIGSTOPped broker still
 * accepts TCP connections (the kernel does), so nothing fails: requests just get no answer. Two
 * tools keep a caller's time bounded anyway:
 *
 * - `withDeadline`: the caller stops waiting at its own deadline; the work goes on (bounded by its
 *   own timeouts) and its late result is dropped, like a late answer dropped by correlation id.
 * - `hedge`: ask candidates one after another, starting the next one when the current one has not
 *   answered within a hedge delay (or failed), and take the first answer ("The Tail at Scale",
 *   Dean and Barroso: hedged requests). The number of attempts is bounded by the candidate list.
 */
import { EdgeqError, toEdgeqError, type Clock, type TimerHandle } from '../core/index.ts';

/** Resolves or rejects as `work` does, or rejects with `onTimeout()` after `timeoutMs`. */
export function withDeadline<T>(work: Promise<T>, timeoutMs: number, clock: Clock, onTimeout: () => EdgeqError): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = clock.setTimeout(() => reject(onTimeout()), Math.max(0, timeoutMs));
    work.then(
      (v) => {
        timer.cancel();
        resolve(v);
      },
      (err: unknown) => {
        timer.cancel();
        reject(err);
      },
    );
  });
}

/** Options of `hedge`. */
export interface HedgeOptions<C> {
  /** Wait for an answer from one candidate before also asking the next. */
  hedgeDelayMs: number;
  clock: Clock;
  /** What is being asked, for the error when every candidate failed. */
  what: string;
  /** Names a candidate in that error. */
  label: (candidate: C) => string;
}

/**
 * Runs `attempt` on `candidates` in order, a new one every `hedgeDelayMs` while none has
 * answered, or at once when the latest one failed. Resolves with the first success; a
 * non-retriable error also ends it (it is an answer, not silence). When all failed, rejects with
 * a retriable BROKER_NOT_AVAILABLE carrying the last error. Each attempt bounds its own time.
 */
export function hedge<C, T>(candidates: readonly C[], attempt: (candidate: C) => Promise<T>, options: HedgeOptions<C>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let next = 0;
    let running = 0;
    let done = false;
    let last: unknown = null;
    let hedgeTimer: TimerHandle | null = null;
    const finish = (fn: () => void) => {
      done = true;
      hedgeTimer?.cancel();
      hedgeTimer = null;
      fn();
    };
    const startNext = (): void => {
      hedgeTimer?.cancel();
      hedgeTimer = null;
      if (done) return;
      if (next >= candidates.length) {
        if (running === 0) {
          const tried = candidates.map(options.label).join(', ');
          finish(() => reject(new EdgeqError('BROKER_NOT_AVAILABLE', `no broker answered ${options.what} (tried ${tried || 'none'})`, { cause: last, details: { tried } })));
        }
        return;
      }
      const candidate = candidates[next++]!;
      running++;
      attempt(candidate).then(
        (value) => {
          running--;
          if (!done) finish(() => resolve(value));
        },
        (err: unknown) => {
          running--;
          last = err;
          if (done) return;
          if (!toEdgeqError(err).retriable) finish(() => reject(err));
          else startNext();
        },
      );
      if (next < candidates.length) hedgeTimer = options.clock.setTimeout(startNext, options.hedgeDelayMs);
    };
    startNext();
  });
}
