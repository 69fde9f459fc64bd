/**
 * A clock for simulations of many members, driven by src/core's FakeClock. The FakeClock keeps
 * its timers in a list it filters and sorts at every step, which is right for a handful of
 * timers and quadratic for the thousands a 200-member simulation holds. SimClock keeps them in a
 * binary heap and gives the FakeClock exactly one timer, for the earliest: tests still move time
 * with FakeClock.advance (or SimClock.advance), and everything fires in (time, creation) order.
 */
import { FakeClock, type Clock, type TimerHandle } from '../../src/core/index.ts';

interface Timer {
  at: number;
  seq: number;
  fn: () => void;
  cancelled: boolean;
}

function before(a: Timer, b: Timer): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}

/** A heap of timers over one FakeClock timer. */
export class SimClock implements Clock {
  private readonly heap: Timer[] = [];
  private seq = 0;
  private armed: TimerHandle | null = null;
  private armedAt = Infinity;
  private running = false;

  constructor(readonly fake: FakeClock = new FakeClock()) {}

  nowMs(): number {
    return this.fake.nowMs();
  }

  monotonicMs(): number {
    return this.fake.monotonicMs();
  }

  setTimeout(fn: () => void, delayMs: number): TimerHandle {
    const t: Timer = { at: this.fake.monotonicMs() + Math.max(0, delayMs), seq: this.seq++, fn, cancelled: false };
    this.push(t);
    if (!this.running) this.arm();
    return { cancel: () => void (t.cancelled = true) };
  }

  /** Moves time forward by `ms` (FakeClock.advance). */
  advance(ms: number): void {
    this.fake.advance(ms);
  }

  /** Timers not yet fired (cancelled ones included until their time comes). */
  get pending(): number {
    return this.heap.length;
  }

  private arm(): void {
    const top = this.heap[0];
    if (top === undefined || top.at >= this.armedAt) return;
    this.armed?.cancel();
    this.armedAt = top.at;
    this.armed = this.fake.setTimeout(() => this.run(), top.at - this.fake.monotonicMs());
  }

  private run(): void {
    this.armed = null;
    this.armedAt = Infinity;
    this.running = true;
    try {
      const now = this.fake.monotonicMs();
      for (let top = this.heap[0]; top !== undefined && top.at <= now; top = this.heap[0]) {
        this.pop();
        if (!top.cancelled) top.fn();
      }
    } finally {
      this.running = false;
      this.arm();
    }
  }

  private push(t: Timer): void {
    const h = this.heap;
    h.push(t);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!before(h[i]!, h[p]!)) break;
      [h[i], h[p]] = [h[p]!, h[i]!];
      i = p;
    }
  }

  private pop(): void {
    const h = this.heap;
    const last = h.pop()!;
    if (h.length === 0) return;
    h[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < h.length && before(h[l]!, h[m]!)) m = l;
      if (r < h.length && before(h[r]!, h[m]!)) m = r;
      if (m === i) break;
      [h[i], h[m]] = [h[m]!, h[i]!];
      i = m;
    }
  }
}
