// Proves one TCP direction on a fake clock: pieces arrive no earlier than their delay and never reordered under jitter and loss stalls, a blackhole holds them until it lifts, the source is paused above the byte bound and resumed below, and a full destination stops the writes until it drains.
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../core/index.ts';
import { Link } from './link.ts';
import { resolveWanLimits, type WanLimits } from './limits.ts';
import { LINK_SETTINGS_DEFAULT, type LinkSettings } from './settings.ts';
import { TcpPipe } from './tcp-pipe.ts';

class FakeSource {
  paused = false;
  pauses = 0;
  pause(): void {
    this.paused = true;
    this.pauses++;
  }
  resume(): void {
    this.paused = false;
  }
}

class FakeDest extends EventEmitter {
  readonly writes: { atMs: number; data: Buffer }[] = [];
  ended = false;
  destroyed = false;
  /** write() answers false (a full socket buffer) while this is set. */
  full = false;
  constructor(private readonly clock: FakeClock) {
    super();
  }
  write(chunk: Buffer): boolean {
    this.writes.push({ atMs: this.clock.monotonicMs(), data: Buffer.from(chunk) });
    return !this.full;
  }
  end(cb?: () => void): void {
    this.ended = true;
    cb?.();
  }
  destroy(): void {
    this.destroyed = true;
  }
  get bytes(): Buffer {
    return Buffer.concat(this.writes.map((w) => w.data));
  }
}

function setup(settings: Partial<LinkSettings>, limits: Partial<WanLimits> = {}, seed = 7) {
  const clock = new FakeClock();
  const resolved = resolveWanLimits(limits);
  const link = new Link('a', 'b', { ...LINK_SETTINGS_DEFAULT, ...settings }, { clock, seed, bandwidthBurstMs: resolved.bandwidthBurstMs });
  const source = new FakeSource();
  const dest = new FakeDest(clock);
  const pipe = new TcpPipe(link, source, clock, resolved);
  pipe.attach(dest);
  return { clock, link, source, dest, pipe };
}

const numbered = (i: number): Buffer => Buffer.from(`${String(i).padStart(6, '0')};`);

describe('TcpPipe', () => {
  it('delivers after the latency, not before', () => {
    const { clock, dest, pipe } = setup({ latencyMs: 40 });
    pipe.push(Buffer.from('hello'));
    clock.advance(39);
    expect(dest.writes).toHaveLength(0);
    clock.advance(1);
    expect(dest.writes).toEqual([{ atMs: 40, data: Buffer.from('hello') }]);
  });

  it('keeps byte order under jitter and loss stalls, and each piece is no earlier than latency − jitter', () => {
    const { clock, link, dest, pipe } = setup({ latencyMs: 30, jitterMs: 25, lossRate: 0.1 });
    const sent: Buffer[] = [];
    for (let i = 0; i < 500; i++) {
      const b = numbered(i);
      sent.push(b);
      pipe.push(b);
      clock.advance(1);
    }
    pipe.pushEnd();
    clock.advance(5_000);
    expect(dest.bytes.equals(Buffer.concat(sent))).toBe(true);
    expect(dest.ended).toBe(true);
    // Stalls happened (10% of 500), and none reordered anything.
    expect(link.counters.tcpLossStalls).toBeGreaterThan(20);
    expect(link.counters.bytesForwarded).toBe(Buffer.concat(sent).length);
    expect(link.counters.bytesQueued).toBe(0);
    // The first piece entered at 0: it cannot be out before latency − jitter.
    expect(dest.writes[0]!.atMs).toBeGreaterThanOrEqual(5);
  });

  it('holds everything during a blackhole, in flight too, and delivers it one delay after the lift', () => {
    const { clock, link, dest, pipe } = setup({ latencyMs: 50 });
    pipe.push(Buffer.from('in-flight;'));
    clock.advance(20);
    link.apply({ blackhole: true });
    pipe.push(Buffer.from('held;'));
    pipe.pushEnd();
    clock.advance(10_000);
    expect(dest.writes).toHaveLength(0);
    expect(dest.ended).toBe(false);
    expect(link.counters.bytesQueued).toBe('in-flight;held;'.length);
    const liftedAt = clock.monotonicMs();
    link.apply({ blackhole: false });
    clock.advance(49);
    expect(dest.writes).toHaveLength(0);
    clock.advance(1);
    expect(dest.bytes.toString()).toBe('in-flight;held;');
    expect(dest.writes[0]!.atMs).toBe(liftedAt + 50);
    expect(dest.ended).toBe(true);
  });

  it('applies a latency change to what enters after it, without reordering what was queued before', () => {
    const { clock, link, dest, pipe } = setup({ latencyMs: 100 });
    pipe.push(Buffer.from('old;'));
    link.apply({ latencyMs: 10 });
    pipe.push(Buffer.from('new;'));
    clock.advance(10);
    expect(dest.writes).toHaveLength(0);
    clock.advance(90);
    expect(dest.bytes.toString()).toBe('old;new;');
    pipe.push(Buffer.from('later;'));
    clock.advance(10);
    expect(dest.writes.at(-1)).toEqual({ atMs: 110, data: Buffer.from('later;') });
  });

  it('paces at the link bandwidth', () => {
    const { clock, dest, pipe } = setup({ latencyMs: 0, bandwidthBytesPerSec: 10_000 });
    pipe.push(Buffer.alloc(30_000));
    clock.advance(1_000);
    // 10 kB/s for a second, in 16 KiB pieces: the first piece is due at 1.64 s.
    expect(dest.bytes.length).toBe(0);
    clock.advance(2_000);
    expect(dest.bytes.length).toBe(30_000);
    expect(dest.writes.at(-1)!.atMs).toBe(3_000);
  });

  it('pauses the source above the bound, resumes it below the resume mark, and waits for drain', () => {
    const limits = { tcpQueuedBytesPerDirectionMax: 64 * 1024, tcpResumeBytes: 32 * 1024, tcpSegmentBytesMax: 16 * 1024 };
    const { clock, source, dest, pipe } = setup({ latencyMs: 10 }, limits);
    dest.full = true;
    for (let i = 0; i < 4; i++) pipe.push(Buffer.alloc(16 * 1024, i));
    expect(source.paused).toBe(false);
    pipe.push(Buffer.alloc(1, 9));
    expect(source.paused).toBe(true);
    expect(pipe.bytesQueued).toBe(64 * 1024 + 1);
    clock.advance(10);
    // All due, written in one write; the destination is full, so nothing more until it drains.
    expect(dest.writes).toHaveLength(1);
    expect(source.paused).toBe(false);
    pipe.push(Buffer.from('after'));
    clock.advance(100);
    expect(dest.writes).toHaveLength(1);
    expect(pipe.bytesQueued).toBe(5);
    dest.full = false;
    dest.emit('drain');
    expect(dest.writes).toHaveLength(2);
    expect(dest.writes[1]!.data.toString()).toBe('after');
    expect(pipe.bytesQueued).toBe(0);
  });

  it('repeats its loss stalls for a seed', () => {
    const stalls = (seed: number): number[] => {
      const { clock, link, pipe } = setup({ latencyMs: 5, lossRate: 0.2 }, {}, seed);
      const at: number[] = [];
      for (let i = 0; i < 200; i++) {
        const before = link.counters.tcpLossStalls;
        pipe.push(numbered(i));
        if (link.counters.tcpLossStalls > before) at.push(i);
        clock.advance(1);
      }
      return at;
    };
    expect(stalls(11)).toEqual(stalls(11));
    expect(stalls(11)).not.toEqual(stalls(12));
  });

  it('stays linear with many small pieces (a chatty stream of one-byte reads)', () => {
    const { clock, dest, pipe } = setup({ latencyMs: 1 }, { tcpQueuedBytesPerDirectionMax: 1024 * 1024 });
    const n = 100_000;
    const startedMs = performance.now();
    for (let i = 0; i < n; i++) pipe.push(Buffer.of(i & 0xff));
    clock.advance(1);
    // Linear work is tens of ms; rescanning the queue at every push (quadratic) took seconds.
    expect(performance.now() - startedMs).toBeLessThan(3_000);
    expect(dest.bytes.length).toBe(n);
    expect(pipe.bytesQueued).toBe(0);
  });
});
