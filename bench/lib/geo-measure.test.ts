// Proves the geo bench matches remote arrivals to records by the id in the payload (duplicates and strays apart), wakes a waiter on the arrival that completes a phase, and turns ack/arrival times into the rate, lag percentiles and catch-up fractions it reports.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ArrivalLog, catchupFigures, decodePayload, encodePayload, lagFigures, spanRate } from './geo-measure.ts';

describe('geo payload ids', () => {
  it('round-trips phase and sequence at the start of a payload of the asked size', () => {
    const p = encodePayload(7, 123_456, 100);
    expect(p.length).toBe(100);
    expect(decodePayload(p)).toEqual({ phase: 7, seq: 123_456 });
    // A view into a larger buffer (as a client hands a record value) decodes the same.
    const big = Buffer.concat([Buffer.alloc(13), p]);
    expect(decodePayload(big.subarray(13))).toEqual({ phase: 7, seq: 123_456 });
  });

  it('refuses a size that cannot hold the id, and reads a short payload as foreign', () => {
    expect(() => encodePayload(1, 1, 7)).toThrow(/at least 8/);
    expect(decodePayload(Buffer.alloc(4))).toBeNull();
  });
});

describe('ArrivalLog', () => {
  afterEach(() => vi.useRealTimers());

  it('times each record once, counts duplicates and strays, and keeps first and last arrival', () => {
    const log = new ArrivalLog();
    log.open(1, 3);
    log.record(encodePayload(1, 2, 16), 50);
    log.record(encodePayload(1, 0, 16), 10);
    log.record(encodePayload(1, 0, 16), 99); // a redelivery: not re-timed
    log.record(encodePayload(2, 0, 16), 20); // no such phase
    log.record(encodePayload(1, 9, 16), 20); // beyond the phase
    expect(log.summary(1)).toEqual({ count: 2, total: 3, duplicates: 1, firstAtMs: 10, lastAtMs: 50 });
    expect(log.strays).toBe(2);
    expect(log.arrivalMs(1, 0)).toBe(10);
    expect(log.arrivalMs(1, 1)).toBeNaN();
    expect(log.since(1, 20)).toEqual({ count: 1, lastAtMs: 50 });
  });

  it('resolves a waiter on the arrival that completes the phase, and at once when the total is lowered to what arrived', async () => {
    const log = new ArrivalLog();
    log.open(3, 4);
    const all = log.reached(3, 60_000);
    let done = false;
    void all.then(() => (done = true));
    log.record(encodePayload(3, 0, 8), 1);
    log.record(encodePayload(3, 1, 8), 2);
    await Promise.resolve();
    expect(done).toBe(false);
    // Publishing stopped after 2 records: the phase is complete with what it has.
    log.setTotal(3, 2);
    await expect(all).resolves.toBe(true);
  });

  it('resolves false when the records do not arrive in time', async () => {
    vi.useFakeTimers();
    const log = new ArrivalLog();
    log.open(4, 2);
    const r = log.reached(4, 1_000);
    vi.advanceTimersByTime(1_001);
    await expect(r).resolves.toBe(false);
  });
});

describe('figures', () => {
  it('rates records from the first to the last arrival', () => {
    expect(spanRate(1001, 0, 2000)).toBe(500);
    expect(spanRate(1, 0, 0)).toBeNull();
  });

  it('takes lag as arrival minus ack after the warm-up, floors early arrivals at 0 and counts the missing', () => {
    const ack = new Float64Array([0, 0, 100, 200, 300, NaN]);
    const arrivals = [5000, 5000, 150, 190, NaN, 700];
    const f = lagFigures(ack, (s) => arrivals[s]!, 2);
    // seq 2: 50 ms; seq 3: arrived 10 ms before its ack → 0 (1 µs); seq 4 missing; seq 5 unacknowledged.
    expect(f.measured).toBe(2);
    expect(f.missing).toBe(1);
    expect(f.p50Ms).toBeLessThan(0.01);
    expect(f.p99Ms).toBeCloseTo(50, 0);
    expect(f.maxMs).toBeCloseTo(50, 0);
  });

  it('reports catch-up as records/s and as fractions of the bandwidth limit', () => {
    const f = catchupFigures({ records: 4000, healAtMs: 1000, lastAtMs: 3000, messageBytes: 1024, wireBytes: 3_500_000, bandwidthBytesPerSec: 2 * 1024 * 1024 });
    expect(f.msgsPerSec).toBe(2000);
    expect(f.payloadBytesPerSec).toBe(2_048_000);
    expect(f.wireBytesPerSec).toBe(1_750_000);
    expect(f.payloadFractionOfLimit).toBeCloseTo(0.977, 3);
    expect(f.wireFractionOfLimit).toBeCloseTo(0.834, 3);
    expect(() => catchupFigures({ records: 0, healAtMs: 0, lastAtMs: 0, messageBytes: 1, wireBytes: 0, bandwidthBytesPerSec: 1 })).toThrow(/after the heal/);
  });
});
