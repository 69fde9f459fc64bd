/**
 * Time is injected so tests can run the same code on a fake clock and real processes alike.
 */

/** A handle returned by `Clock.setTimeout`, to cancel the timer. */
export interface TimerHandle {
  cancel(): void;
}

/** Wall-clock time, monotonic time and timers. */
export interface Clock {
  /** Milliseconds since the Unix epoch (record timestamps, retention). */
  nowMs(): number;
  /** Monotonic milliseconds (durations, lease deadlines); unaffected by wall-clock jumps. */
  monotonicMs(): number;
  /** Runs `fn` after `delayMs`; the timer never keeps the process alive on its own. */
  setTimeout(fn: () => void, delayMs: number): TimerHandle;
}

/** The real clock. */
export const systemClock: Clock = {
  nowMs: () => Date.now(),
  monotonicMs: () => performance.now(),
  setTimeout(fn, delayMs) {
    const t = setTimeout(fn, delayMs);
    t.unref();
    return { cancel: () => clearTimeout(t) };
  },
};

interface FakeTimer {
  at: number;
  seq: number;
  fn: () => void;
  cancelled: boolean;
}

/** A clock that only moves when told to; timers fire in order during `advance`. */
export class FakeClock implements Clock {
  private wallMs: number;
  private monoMs = 0;
  private timers: FakeTimer[] = [];
  private seq = 0;

  constructor(startWallMs = 1_700_000_000_000) {
    this.wallMs = startWallMs;
  }

  nowMs(): number {
    return this.wallMs;
  }

  monotonicMs(): number {
    return this.monoMs;
  }

  setTimeout(fn: () => void, delayMs: number): TimerHandle {
    const timer: FakeTimer = { at: this.monoMs + Math.max(0, delayMs), seq: this.seq++, fn, cancelled: false };
    this.timers.push(timer);
    return { cancel: () => void (timer.cancelled = true) };
  }

  /** Moves time forward by `ms`, firing due timers in time order. */
  advance(ms: number): void {
    const target = this.monoMs + ms;
    for (;;) {
      this.timers = this.timers.filter((t) => !t.cancelled);
      this.timers.sort((a, b) => a.at - b.at || a.seq - b.seq);
      const next = this.timers[0];
      if (next === undefined || next.at > target) break;
      this.timers.shift();
      this.wallMs += next.at - this.monoMs;
      this.monoMs = next.at;
      next.fn();
    }
    this.wallMs += target - this.monoMs;
    this.monoMs = target;
  }

  /** Number of timers still pending. */
  pendingTimers(): number {
    return this.timers.filter((t) => !t.cancelled).length;
  }
}
