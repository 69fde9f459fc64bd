// Proves the region history: two gateways' steps summed by t, gaps filled with zeros, the retention cut, and a start that retries until the topic answers.
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../core/index.ts';
import { encodeIngressStep, type IngressStepRecord } from './codec.ts';
import { IngressHistory, type HistoryRecord, type HistorySource } from './history.ts';

const STEP = 1_000;
const T0 = 1_700_000_000_000;

function rec(member: string, t: number, records: number, extra: Partial<IngressStepRecord> = {}): HistoryRecord {
  const { key, value } = encodeIngressStep({ member, t, stepMs: STEP, records, recordsMax: records * 2, bytes: records * 10, bytesMax: records * 20, ...extra });
  return { key, value };
}

/** A source that fails `failures` opens, then hands out what was pushed. */
function fakeSource(failures: number) {
  const queue: HistoryRecord[] = [];
  let opens = 0;
  const source: HistorySource & { opens: () => number; push: (r: HistoryRecord) => void } = {
    opens: () => opens,
    push: (r) => void queue.push(r),
    async open() {
      opens++;
      if (opens <= failures) throw new Error('cell not up');
    },
    async poll() {
      await new Promise((r) => setImmediate(r));
      return { records: queue.splice(0), caughtUp: true };
    },
    async close() {},
  };
  return source;
}

const idle = () => ({ open: async () => {}, poll: async () => ({ records: [], caughtUp: true }), close: async () => {} });

describe('IngressHistory', () => {
  it('sums the gateways by step and fills gaps with zeros', () => {
    const clock = new FakeClock(T0 + 5 * STEP + 300);
    const h = new IngressHistory({ source: idle(), stepMs: STEP, retentionMs: 100 * STEP, clock });
    h.ingest(rec('a', T0, 10));
    h.ingest(rec('b', T0, 5));
    // Written twice (a retried append): counted once.
    h.ingest(rec('b', T0, 5));
    h.ingest(rec('a', T0 + 3 * STEP, 7));
    // The current step is still open: not answered.
    h.ingest(rec('a', T0 + 5 * STEP, 99));
    h.ingest({ key: Buffer.from('a'), value: Buffer.from('garbage') });
    h.ingest(rec('a', 1_700_000_040_000, 1, { stepMs: 60_000 }));
    const steps = h.steps();
    expect(steps.map((s) => s.t)).toEqual([0, 1, 2, 3, 4].map((i) => T0 + i * STEP));
    expect(steps.map((s) => s.records)).toEqual([15, 0, 0, 7, 0]);
    expect(steps[0]).toEqual({ t: T0, records: 15, recordsMax: 30, bytes: 150, bytesMax: 300 });
    expect(h.lastStep()).toEqual({ t: T0 + 4 * STEP, records: 0, recordsMax: 0, bytes: 0, bytesMax: 0 });
    expect(h.skipped()).toEqual({ invalid: 1, otherStep: 1 });
    clock.advance(STEP);
    expect(h.steps().at(-1)).toMatchObject({ t: T0 + 5 * STEP, records: 99 });
  });

  it('cuts steps older than the retention', () => {
    const clock = new FakeClock(T0 + 20 * STEP);
    const h = new IngressHistory({ source: idle(), stepMs: STEP, retentionMs: 10 * STEP, clock });
    h.ingest(rec('a', T0 + 5 * STEP, 1));
    h.ingest(rec('a', T0 + 12 * STEP, 2));
    h.ingest(rec('a', T0 + 15 * STEP, 3));
    expect(h.steps()[0]).toMatchObject({ t: T0 + 12 * STEP, records: 2 });
    expect(h.steps()).toHaveLength(8);
    clock.advance(3 * STEP);
    expect(h.steps()[0]).toMatchObject({ t: T0 + 15 * STEP, records: 3 });
    expect(h.steps().at(-1)!.t).toBe(T0 + 22 * STEP);
  });

  it('bounds the steps it keeps', () => {
    const clock = new FakeClock(T0 + 100 * STEP);
    const h = new IngressHistory({ source: idle(), stepMs: STEP, retentionMs: 1_000 * STEP, clock, stepsMax: 10 });
    for (let i = 0; i < 100; i++) h.ingest(rec('a', T0 + i * STEP, i));
    expect(h.steps()).toHaveLength(10);
    expect(h.steps()[0]!.records).toBe(90);
  });

  it('retries its start in the background and emits closed steps once read back', async () => {
    const clock = new FakeClock(T0 + 250);
    const source = fakeSource(3);
    const h = new IngressHistory({ source, stepMs: STEP, retentionMs: 100 * STEP, clock });
    const seen: number[] = [];
    h.on('step', (s) => seen.push(s.records));
    h.start();
    source.push(rec('a', T0, 4));
    // Bounded: each round lets the background loop run, then moves the clock past its backoff.
    for (let i = 0; i < 50 && !h.ready(); i++) {
      await new Promise((r) => setImmediate(r));
      clock.advance(200);
    }
    expect(source.opens()).toBe(4);
    expect(h.ready()).toBe(true);
    expect(h.lastStep()).not.toBeNull();
    const before = seen.length;
    clock.advance(STEP);
    expect(seen.length).toBe(before + 1);
    await h.close();
  });
});
