// Proves the admission limiter on a fake clock with fake signals: capacity falls when a signal is over its target and a refused request carries throttleMs, Retry-After and the RateLimit fields; tenants share a cut capacity max-min fairly by weight (one offering 10x its share cannot starve the others; Jain ≥ 0.95 over admitted/weight); the concurrency limit holds; the binding-change log line appears once per change; view() has its documented shape; bad options and input are typed errors that change nothing.
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { EdgeqError, FakeClock } from '../src/core/index.ts';
import { jainIndex } from './fair-share.ts';
import { AdmissionLimiter, CONCURRENCY_MIN, CONCURRENCY_TARGET_MULTIPLE, LIMITER_FLOOR_FRACTION, type AdmissionLimiterOptions, type LimiterView } from './limiter.ts';
import { GRADIENT_DEFAULTS } from './controller.ts';
import { SIGNAL_NAMES, SIGNAL_TARGETS_DEFAULT, type LoadSignals } from './signals.ts';

const INTERVAL_MS = 1000;
const TARGET_P99_MS = 20;

/** A signal source the test sets by hand. */
class FakeSignals {
  now: Partial<LoadSignals> = {};
  read(): Partial<LoadSignals> {
    return { ...this.now };
  }
}

function limiter(o: Partial<AdmissionLimiterOptions> & { clock: FakeClock }): AdmissionLimiter {
  return new AdmissionLimiter({ controller: 'edgeq', intervalMs: INTERVAL_MS, initialPerSec: 1000, targets: { produceP99Ms: TARGET_P99_MS }, random: () => 0.5, ...o });
}

/** The error `fn` throws (fails the test when it throws none). */
function thrown(fn: () => unknown): EdgeqError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(EdgeqError);
    return err as EdgeqError;
  }
  throw new Error('expected a throw');
}

/**
 * Runs `ms` milliseconds of single-record requests, `perSec[t]` per second for each tenant, evenly
 * spaced; each admitted request finishes at once with 1 ms latency. Returns the records admitted
 * per tenant in the last `measureMs`.
 */
function drive(l: AdmissionLimiter, clock: FakeClock, perSec: Record<string, number>, ms: number, measureMs: number): Record<string, number> {
  const credit: Record<string, number> = Object.fromEntries(Object.keys(perSec).map((t) => [t, 0]));
  const admitted: Record<string, number> = Object.fromEntries(Object.keys(perSec).map((t) => [t, 0]));
  for (let step = 0; step < ms; step++) {
    clock.advance(1);
    for (const [t, rate] of Object.entries(perSec)) {
      credit[t]! += rate / 1000;
      // Bounded: at most `rate / 1000 + 1` requests per tenant per step.
      while (credit[t]! >= 1) {
        credit[t]! -= 1;
        try {
          l.admit(t, 1).done(true, 1);
          if (step >= ms - measureMs) admitted[t]!++;
        } catch (err) {
          if (!(err instanceof EdgeqError && err.code === 'TEMPORARY_REDUCED_CAPACITY')) throw err;
        }
      }
    }
  }
  return admitted;
}

describe('AdmissionLimiter: capacity from the signals', () => {
  it('cuts capacity when a signal is over target, and a refusal carries throttleMs, Retry-After and RateLimit', () => {
    const clock = new FakeClock();
    const signals = new FakeSignals();
    const l = limiter({ clock, signals });
    l.start();
    // Demand at capacity with quiet signals: no cut.
    drive(l, clock, { acme: 1000 }, 2000, 0);
    const before = l.view().capacityPerSec!;
    expect(before).toBeGreaterThanOrEqual(1000);
    // The produce p99 at 4x its target: the gradient cuts, at most by half per interval.
    signals.now = { produceP99Ms: 4 * TARGET_P99_MS };
    clock.advance(INTERVAL_MS);
    const cut = l.view();
    expect(cut.capacityPerSec).toBeLessThan(before);
    expect(cut.capacityPerSec).toBeGreaterThanOrEqual(before * GRADIENT_DEFAULTS.cutFloor);
    expect(cut.binding).toBe('produceP99Ms');
    expect(cut.pressure).toBeCloseTo(4, 9);
    expect(cut.signals.produceP99Ms).toEqual({ value: 4 * TARGET_P99_MS, target: TARGET_P99_MS, pressure: 4, failures: 0 });
    // Past its share (the whole capacity: one tenant), the next request is refused.
    let err: EdgeqError | null = null;
    for (let i = 0; i < 10_000 && !err; i++) {
      try {
        l.admit('acme', 1).done(true, 1);
      } catch (e) {
        err = e as EdgeqError;
      }
    }
    expect(err?.code).toBe('TEMPORARY_REDUCED_CAPACITY');
    expect(err!.httpStatus).toBe(503);
    const throttleMs = err!.details['throttleMs'] as number;
    expect(throttleMs).toBeGreaterThanOrEqual(1);
    const headers = err!.details['headers'] as Record<string, string>;
    // random() = 0.5: throttle × 1.25, in whole seconds, at least 1.
    expect(headers['Retry-After']).toBe(String(Math.max(1, Math.ceil((throttleMs * 1.25) / 1000))));
    expect(headers['RateLimit-Policy']).toBe(`"capacity";q=${Math.floor(cut.capacityPerSec!)};w=1`);
    expect(headers['RateLimit']).toBe(`"capacity";r=0;t=${Math.ceil(throttleMs / 1000)}`);
    l.close();
  });

  it('the seeds\' rule sets capacity = base × (1 − load/100) behind the same interface', () => {
    const clock = new FakeClock();
    const signals = new FakeSignals();
    const l = limiter({ clock, signals, controller: 'seeds', initialPerSec: 2000 });
    signals.now = { fsyncP99Ms: SIGNAL_TARGETS_DEFAULT.fsyncP99Ms * 0.25 };
    l.tick();
    expect(l.view().capacityPerSec).toBeCloseTo(1500, 9);
    expect(l.view().binding).toBeNull(); // 0.25 < BINDING_PRESSURE_MIN
  });

  it('the produce p99 is that of the requests that finished in the interval, not aged by those still in flight', () => {
    const clock = new FakeClock();
    const l = limiter({ clock });
    l.admit('acme', 1).done(true, 7);
    l.admit('acme', 1); // stuck (a leader election): the concurrency limit's case, not the rate's
    clock.advance(INTERVAL_MS);
    l.tick();
    expect(l.view()).toMatchObject({ capacityPerSec: 1000, binding: null, inFlight: 1 });
    expect(l.view().signals.produceP99Ms.value).toBe(7);
  });

  it('a source that throws reports NaN (null in the view), which the controller ignores', () => {
    const clock = new FakeClock();
    const l = limiter({
      clock,
      signals: {
        read: () => {
          throw new Error('boom');
        },
      },
    });
    l.tick();
    const v = l.view();
    expect(v.signals.fsyncP99Ms.value).toBeNull();
    expect(v.signals.produceP99Ms.value).toBe(0);
    expect(v.pressure).toBe(0);
    expect(v.capacityPerSec).toBe(1000);
  });

  it('a pressure admission does not relieve: edgeq holds after the cut that brought no relief, the seeds\' rule falls to the floor of a tenth of the initial', () => {
    for (const controller of ['edgeq', 'seeds'] as const) {
      const clock = new FakeClock();
      const signals = new FakeSignals();
      // A disk slowed by others: fsync p99 at 1.5x its target whatever the gateway sends (10 records/s).
      signals.now = { fsyncP99Ms: 1.5 * SIGNAL_TARGETS_DEFAULT.fsyncP99Ms };
      const l = limiter({ clock, signals, controller, initialPerSec: 20_000 });
      l.start();
      drive(l, clock, { acme: 10 }, 60_000, 0);
      // edgeq: one cut (20 000 / 1.5), then no relief, so it holds; the seeds' rule has no memory and
      // sits at its floor (base × (1 − 1), floored at a tenth of the initial).
      expect(l.view().capacityPerSec, controller).toBe(controller === 'edgeq' ? 20_000 / 1.5 : 20_000 * LIMITER_FLOOR_FRACTION);
      // A burst of 40 records now (the case that met 503s at the law's own floor of 10/s) passes.
      expect(() => {
        for (let i = 0; i < 40; i++) l.admit('acme', 1).done(true, 1);
      }).not.toThrow();
      l.close();
    }
  });

  it('never passes the ceiling, applied at once', () => {
    const clock = new FakeClock();
    const l = limiter({ clock, initialPerSec: 5000 });
    l.setCeiling(800);
    expect(l.view()).toMatchObject({ capacityPerSec: 800, ceilingPerSec: 800 });
    l.setCeiling(Infinity);
    expect(l.view().ceilingPerSec).toBeNull();
  });

  it('pre-warm lifts capacity to the plan at once, the concurrency limit with it, and drops back when the plan ends', () => {
    const clock = new FakeClock();
    const l = limiter({ clock, initialPerSec: 500 });
    const before = l.view();
    l.prewarm(4000);
    expect(l.view()).toMatchObject({ capacityPerSec: 4000, plannedPerSec: 4000 });
    expect(l.view().concurrencyLimit!).toBeGreaterThan(before.concurrencyLimit!);
    // Over one second a tenant is admitted the planned rate, not the 500/s the controller had.
    let admitted = 0;
    for (let ms = 0; ms < 1000; ms += 10) {
      clock.advance(10);
      for (let i = 0; i < 100; i++) {
        try {
          l.admit('acme', 1).done(true, 1);
          admitted++;
        } catch {
          break;
        }
      }
    }
    expect(admitted).toBeGreaterThan(3000);
    l.prewarm(null);
    expect(l.view()).toMatchObject({ capacityPerSec: 500, plannedPerSec: null });
    // The ceiling still bounds the lift.
    l.setCeiling(1000);
    l.prewarm(4000);
    expect(l.view().capacityPerSec).toBe(1000);
    l.close();
  });
});

describe('AdmissionLimiter: max-min fair shares by weight', () => {
  // The produce p99 held between the growth margin and the target: capacity neither grows nor
  // is cut, so the shares are of a fixed 1200 records/s.
  const holding = { produceP99Ms: TARGET_P99_MS * 0.95 };
  const weights = new Map([
    ['a', 2],
    ['b', 1],
    ['noisy', 1],
  ]);
  const MEASURE_MS = 20_000;

  it('a tenant offering 10x its share gets what the others leave; the others get their demand or their share', () => {
    const clock = new FakeClock();
    const signals = new FakeSignals();
    signals.now = holding;
    const l = limiter({ clock, signals, initialPerSec: 1200, weights });
    l.start();
    // Shares by weight: a 600, b 300, noisy 300. a asks 400 (under its share), b 1000, noisy 3000 (10x).
    // Max-min: a gets its 400; b and noisy split the remaining 800 equally (equal weights).
    const got = drive(l, clock, { a: 400, b: 1000, noisy: 3000 }, 30_000, MEASURE_MS);
    const perSec = (t: string) => got[t]! / (MEASURE_MS / 1000);
    expect(l.view().capacityPerSec).toBe(1200);
    expect(perSec('a')).toBeGreaterThanOrEqual(400 * 0.97);
    expect(perSec('b')).toBeGreaterThanOrEqual(400 * 0.95);
    expect(perSec('b')).toBeLessThanOrEqual(400 * 1.05);
    expect(perSec('noisy')).toBeLessThanOrEqual(400 * 1.05);
    // Together no more than the capacity (+ the buckets' bursts, a tenth of a second, once).
    expect(perSec('a') + perSec('b') + perSec('noisy')).toBeLessThanOrEqual(1200 * 1.01);
    const view = l.view();
    const noisy = view.tenants.find((t) => t.tenant === 'noisy')!;
    expect(noisy.demandPerSec).toBeCloseTo(3000, -1);
    expect(noisy.throttledPerSec).toBeGreaterThan(2000);
    l.close();
  });

  it('Jain ≥ 0.95 over admitted/weight when one tenant offers 10x its share and the others their share', () => {
    const clock = new FakeClock();
    const signals = new FakeSignals();
    signals.now = holding;
    const l = limiter({ clock, signals, initialPerSec: 1200, weights });
    l.start();
    const got = drive(l, clock, { a: 600, b: 300, noisy: 3000 }, 30_000, MEASURE_MS);
    const byWeight = [...weights].map(([t, w]) => got[t]! / w);
    const jain = jainIndex(byWeight);
    expect(jain).toBeGreaterThanOrEqual(0.95);
    // And the light tenants were not starved: each got ≥ 95% of what it asked.
    expect(got['a']! / (MEASURE_MS / 1000)).toBeGreaterThanOrEqual(600 * 0.95);
    expect(got['b']! / (MEASURE_MS / 1000)).toBeGreaterThanOrEqual(300 * 0.95);
    l.close();
  });

  it('under capacity nobody is refused, however demand moves within an interval (the spare bucket)', () => {
    const clock = new FakeClock();
    const signals = new FakeSignals();
    signals.now = holding;
    const l = limiter({ clock, signals, initialPerSec: 1200, weights });
    l.start();
    drive(l, clock, { a: 100, b: 100 }, 3000, 0);
    // b jumps from 100/s to 700/s: 800/s in all, under 1200, is admitted from the first second.
    const got = drive(l, clock, { a: 100, b: 700 }, 1000, 1000);
    expect(got['b']).toBeGreaterThanOrEqual(690);
    expect(l.totals().find((t) => t.tenant === 'b')!.throttled).toBe(0);
    l.close();
  });
});

describe('AdmissionLimiter: concurrency, none, logs, view, bad input', () => {
  it('refuses past the concurrency limit (Little\'s law, floored) and admits again once a request is done', () => {
    const clock = new FakeClock();
    const l = limiter({ clock, initialPerSec: 190 });
    // 190 records/s × 20 ms × 4 = 15.2 requests: the floor applies.
    expect(l.view().concurrencyLimit).toBe(CONCURRENCY_MIN);
    const tickets = Array.from({ length: CONCURRENCY_MIN }, () => l.admit('acme', 1));
    expect(l.view().inFlight).toBe(CONCURRENCY_MIN);
    expect(thrown(() => l.admit('acme', 1)).code).toBe('TEMPORARY_REDUCED_CAPACITY');
    tickets[0]!.done(true, 5);
    tickets[0]!.done(true, 5); // a second call is ignored
    expect(l.view().inFlight).toBe(CONCURRENCY_MIN - 1);
    expect(() => l.admit('acme', 1)).not.toThrow();
  });

  it('derives the concurrency limit from capacity × the p99 target per request', () => {
    const clock = new FakeClock();
    const l = limiter({ clock, initialPerSec: 100_000 });
    // 100 000 single records/s × 20 ms × 4 = 8 000 requests in flight.
    expect(l.view().concurrencyLimit).toBe(2000 * CONCURRENCY_TARGET_MULTIPLE);
  });

  it('shares the concurrency limit by weight: a tenant filling the slots does not shut out the others', () => {
    const clock = new FakeClock();
    // 1 000 records/s × 20 ms × 4 = 80 requests in flight.
    const l = limiter({ clock, initialPerSec: 1_000 });
    const limit = l.view().concurrencyLimit!;
    const held: { done(ok: boolean, ms: number): void }[] = [];
    for (let i = 0; i < limit; i++) held.push(l.admit('noisy', 1));
    // The slots are full, all noisy's: noisy is refused, a quiet tenant still gets its part.
    expect(() => l.admit('noisy', 1)).toThrow(expect.objectContaining({ code: 'TEMPORARY_REDUCED_CAPACITY' }));
    expect(() => l.precheck('noisy')).toThrow(expect.objectContaining({ code: 'TEMPORARY_REDUCED_CAPACITY' }));
    expect(() => l.precheck('quiet')).not.toThrow();
    const quiet = l.admit('quiet', 1);
    expect(l.view().inFlight).toBe(limit + 1);
    // Never more than twice the limit in flight.
    for (let i = 0; i < 3 * limit; i++) {
      try {
        held.push(l.admit(`t${i}`, 1));
      } catch {
        // refused
      }
    }
    expect(l.view().inFlight).toBeLessThanOrEqual(2 * limit);
    quiet.done(true, 1);
    for (const h of held) h.done(true, 1);
    expect(l.view().inFlight).toBe(0);
  });

  it('with the none controller admits everything and only counts', () => {
    const clock = new FakeClock();
    const signals = new FakeSignals();
    signals.now = { produceP99Ms: 100 * TARGET_P99_MS };
    const l = limiter({ clock, signals, controller: 'none' });
    for (let i = 0; i < 5000; i++) l.admit('acme', 10);
    clock.advance(INTERVAL_MS);
    l.tick();
    const v = l.view();
    expect(v).toMatchObject({ controller: 'none', capacityPerSec: null, concurrencyLimit: null, inFlight: 5000, demandPerSec: 50_000 });
    expect(v.tenants[0]).toMatchObject({ tenant: 'acme', admittedPerSec: 50_000, throttledPerSec: 0, sharePerSec: null });
  });

  it('logs one line per change of the binding signal', () => {
    const lines: Record<string, unknown>[] = [];
    const logger = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) });
    const clock = new FakeClock();
    const signals = new FakeSignals();
    const l = limiter({ clock, signals, logger });
    l.start();
    const phases: [Partial<LoadSignals>, number][] = [
      [{}, 3],
      [{ produceP99Ms: 2 * TARGET_P99_MS }, 3],
      [{ produceP99Ms: 2 * TARGET_P99_MS, fsyncP99Ms: 5 * SIGNAL_TARGETS_DEFAULT.fsyncP99Ms }, 2],
      [{}, 2],
    ];
    for (const [s, intervals] of phases) {
      signals.now = s;
      clock.advance(intervals * INTERVAL_MS);
    }
    const changes = lines.filter((l) => l['msg'] === 'limiter binding signal changed').map((l) => [l['from'], l['to']]);
    expect(changes).toEqual([
      [null, 'produceP99Ms'],
      ['produceP99Ms', 'fsyncP99Ms'],
      ['fsyncP99Ms', null],
    ]);
    l.close();
    expect(clock.pendingTimers()).toBe(0);
  });

  it('view() has the documented shape', () => {
    const clock = new FakeClock();
    const l = limiter({ clock });
    l.admit('acme', 3).done(true, 2);
    clock.advance(INTERVAL_MS);
    l.tick();
    const v: LimiterView = l.view();
    expect(Object.keys(v).sort()).toEqual(['achievedPerSec', 'binding', 'capacityPerSec', 'ceilingPerSec', 'plannedPerSec', 'concurrencyLimit', 'controller', 'demandPerSec', 'inFlight', 'intervalMs', 'pressure', 'signals', 'tenants'].sort());
    expect(Object.keys(v.signals).sort()).toEqual([...SIGNAL_NAMES].sort());
    for (const s of Object.values(v.signals)) expect(Object.keys(s).sort()).toEqual(['failures', 'pressure', 'target', 'value']);
    expect(v).toMatchObject({ controller: 'edgeq', intervalMs: INTERVAL_MS, capacityPerSec: 1000, inFlight: 0, demandPerSec: 3, achievedPerSec: 3, ceilingPerSec: null, binding: null });
    expect(v.tenants).toEqual([{ tenant: 'acme', weight: 1, demandPerSec: 3, admittedPerSec: 3, throttledPerSec: 0, sharePerSec: 1000 }]);
    expect(JSON.parse(JSON.stringify(v))).toEqual(v);
  });

  it('bad options and input are typed errors naming the field, and change nothing', () => {
    const clock = new FakeClock();
    for (const [o, key] of [
      [{ controller: 'aimd' }, 'controller'],
      [{ intervalMs: 0 }, 'intervalMs'],
      [{ intervalMs: 1.5 }, 'intervalMs'],
      [{ initialPerSec: -1 }, 'initialPerSec'],
      [{ initialPerSec: NaN }, 'initialPerSec'],
      [{ targets: { produceP99Ms: -5 } }, 'targets.produceP99Ms'],
      [{ targets: { cpu: 1 } }, 'targets.cpu'],
    ] as [Partial<Omit<AdmissionLimiterOptions, "clock">>, string][]) {
      const err = thrown(() => limiter({ clock, ...o }));
      expect(err.code).toBe('INVALID_CONFIG');
      expect(err.details['key']).toBe(key);
    }
    const l = limiter({ clock });
    for (const records of [0, -1, 1.5, NaN]) {
      const err = thrown(() => l.admit('acme', records));
      expect([err.code, err.details['field']]).toEqual(['INVALID_ARGUMENT', 'records']);
    }
    expect(l.view().tenants).toEqual([]);
    l.setCeiling(900);
    for (const bad of [NaN, 0, -1, 5]) expect(thrown(() => l.setCeiling(bad)).details['field']).toBe('ceilingPerSec');
    expect(l.view()).toMatchObject({ ceilingPerSec: 900, capacityPerSec: 900 });
    for (const bad of [NaN, 0, -1, 5, Infinity, 2e9]) expect(thrown(() => l.prewarm(bad)).details['field']).toBe('plannedPerSec');
    expect(l.view()).toMatchObject({ plannedPerSec: null, capacityPerSec: 900 });
  });
});
