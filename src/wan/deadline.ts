/**
 * A timer for an absolute monotonic deadline that never fires before it. Node's timers compare
 * against a loop time that can lag `performance.now()` by up to a millisecond, so a plain
 * `setTimeout(fn, dueMs - now)` can run a fraction of a millisecond early, and a link configured
 * for 25 ms would sometimes deliver in 24.6. The timer checks the clock when it fires and
 * re-arms for what is left.
 */
import type { Clock, TimerHandle } from '../core/index.ts';

/** Runs `fn` once `clock.monotonicMs()` has reached `dueMs` (always asynchronously). */
export function atDeadline(clock: Clock, dueMs: number, fn: () => void): TimerHandle {
  let handle: TimerHandle;
  let cancelled = false;
  const arm = (): void => {
    const leftMs = dueMs - clock.monotonicMs();
    if (leftMs <= 0) {
      if (!cancelled) fn();
      return;
    }
    handle = clock.setTimeout(arm, Math.ceil(leftMs));
  };
  handle = clock.setTimeout(arm, Math.max(0, Math.ceil(dueMs - clock.monotonicMs())));
  return {
    cancel: () => {
      cancelled = true;
      handle.cancel();
    },
  };
}
