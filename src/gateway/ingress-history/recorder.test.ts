// Proves the recorder's steps on a fake clock: aligned boundaries, mean and max per step, and steps kept while the cell is down, flushed in order, bounded with a counter.
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../core/index.ts';
import type { IngressStepRecord } from './codec.ts';
import { IngressRecorder, sampleMsOf } from './recorder.ts';

const STEP_MS = 1_000;

function rig(o: { start?: number; pendingStepsMax?: number } = {}) {
  // 250 ms into a step: the first step is partial.
  const clock = new FakeClock(o.start ?? 1_700_000_000_250);
  const totals = { records: 0, bytes: 0 };
  const written: IngressStepRecord[] = [];
  let down = false;
  const attempts: number[] = [];
  const rec = new IngressRecorder({
    member: 'gw-a',
    stepMs: STEP_MS,
    totals: () => ({ ...totals }),
    append: async (steps) => {
      attempts.push(steps.length);
      if (down) throw new Error('cell down');
      written.push(...steps);
    },
    clock,
    ...(o.pendingStepsMax ? { pendingStepsMax: o.pendingStepsMax } : {}),
  });
  return { clock, totals, written, rec, attempts, setDown: (d: boolean) => void (down = d) };
}

/** Lets the appender's promise settle between clock moves. */
const settle = async () => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

describe('IngressRecorder', () => {
  it('samples at min(1000, step / 4)', () => {
    expect(sampleMsOf(60_000)).toBe(1_000);
    expect(sampleMsOf(1_000)).toBe(250);
    expect(sampleMsOf(100)).toBe(25);
  });

  it('writes one step per boundary with the mean and the largest sampled rate', async () => {
    const { clock, totals, written, rec } = rig();
    rec.start();
    // Partial first step: 100 records in its last 750 ms.
    totals.records += 100;
    totals.bytes += 1_000;
    clock.advance(750);
    await settle();
    expect(written).toHaveLength(1);
    expect(written[0]).toMatchObject({ member: 'gw-a', t: 1_700_000_000_000, stepMs: STEP_MS, records: 100, bytes: 1_000 });
    // Full step: a burst of 200 in one 250 ms sample, then quiet.
    totals.records += 200;
    totals.bytes += 400;
    clock.advance(250);
    clock.advance(750);
    await settle();
    expect(written).toHaveLength(2);
    expect(written[1]!.t).toBe(1_700_000_001_000);
    expect(written[1]!.records).toBe(200);
    expect(written[1]!.recordsMax).toBe(800);
    expect(written[1]!.bytes).toBe(400);
    expect(written[1]!.bytesMax).toBe(1_600);
    // An idle step is written as zeros.
    clock.advance(1_000);
    await settle();
    expect(written[2]).toMatchObject({ t: 1_700_000_002_000, records: 0, recordsMax: 0 });
    // Every boundary is a multiple of the step; the sum of mean × step is what went through.
    expect(written.every((s) => s.t % STEP_MS === 0)).toBe(true);
    expect(written.reduce((n, s) => n + s.records * (STEP_MS / 1000), 0)).toBe(300);
    await rec.close();
  });

  it('keeps steps while the cell is down and writes them in order once it is back', async () => {
    const { clock, totals, written, rec, setDown } = rig();
    setDown(true);
    rec.start();
    for (let i = 0; i < 5; i++) {
      totals.records += 10 * (i + 1);
      clock.advance(1_000);
      await settle();
    }
    expect(written).toHaveLength(0);
    expect(rec.pendingSteps()).toBe(5);
    setDown(false);
    clock.advance(1_000);
    await settle();
    clock.advance(1_000);
    await settle();
    expect(rec.pendingSteps()).toBe(0);
    const ts = written.map((s) => s.t);
    expect(ts).toEqual([...ts].sort((a, b) => a - b));
    expect(new Set(ts).size).toBe(ts.length);
    expect(written.slice(0, 5).map((s) => s.records)).toEqual([10, 20, 30, 40, 50]);
    expect(rec.dropped()).toBe(0);
    await rec.close();
  });

  it('drops the oldest past the bound and counts them', async () => {
    const { clock, totals, written, rec, setDown } = rig({ pendingStepsMax: 3 });
    setDown(true);
    rec.start();
    for (let i = 0; i < 7; i++) {
      totals.records += i + 1;
      clock.advance(1_000);
      await settle();
    }
    expect(rec.pendingSteps()).toBe(3);
    expect(rec.dropped()).toBe(4);
    setDown(false);
    clock.advance(1_000);
    await settle();
    // The step that closed as the cell came back pushed out one more: the three newest, in order.
    expect(rec.dropped()).toBe(5);
    expect(written.map((s) => s.records)).toEqual([6, 7, 0]);
    await rec.close();
    expect(clock.pendingTimers()).toBe(0);
  });
});
