// Proves the live planner on a FakeClock with scripted forecasters: the decision for step t is
// taken at t − L from the history before it (a different future leaves it unchanged), headroom,
// min/max and the ceiling's floor apply, cold start goes last_value → seasonal_naive → selection,
// a forecaster wrong on purpose drives it to reactive mode and back, a dead region's forecast is
// added, bad config names its key, and retraining (schedule, drift) never overlaps nor blocks a step.
import { describe, expect, it } from 'vitest';
import { FakeClock, isEdgeqError, seededRandom } from '../../src/core/index.ts';
import type { Forecast, Forecaster, SeriesView } from '../forecaster.ts';
import type { ModelFactory, RetrainRequest, Selected } from './model-choice.ts';
import { selectionMinSteps } from './model-choice.ts';
import { instancesFor } from './plan-arithmetic.ts';
import { LIMITER_CEILING_MIN, Planner, type PlannerOptions } from './planner.ts';
import type { IngressStep } from './types.ts';

const stepMs = 1_000;
const season = 20;
const horizon = 6;
const lead = 2;
const t0 = 1_700_000_000_000;
const truth = (i: number): number => 100 + 50 * Math.sin((2 * Math.PI * i) / season);

/** A history that grows one step at a time; values[i] for step i. */
class History {
  readonly steps: IngressStep[] = [];
  push(v: number): void {
    const t = t0 + this.steps.length * stepMs;
    this.steps.push({ t, records: v, recordsMax: v, bytes: v * 100, bytesMax: v * 100 });
  }
  fill(n: number, f: (i: number) => number): this {
    while (this.steps.length < n) this.push(f(this.steps.length));
    return this;
  }
}

/** point[h] = f(view, h); p90 = 1.2 × point. Records every view's origin and last value. */
class Scripted implements Forecaster {
  readonly name = 'scripted';
  readonly seen: { origin: number; length: number }[] = [];
  constructor(public f: (v: SeriesView, h: number) => number) {}
  async fit() {
    return { trainMs: 0, backend: 'js' };
  }
  async forecast(views: readonly SeriesView[], H: number): Promise<Forecast[]> {
    return views.map((v) => {
      this.seen.push({ origin: v.origin, length: v.values.length });
      const point = Float64Array.from({ length: H }, (_, h) => this.f(v, h));
      return { point, p90: point.map((x) => 1.2 * x), p10: point.map((x) => 0.7 * x) };
    });
  }
}

/** A factory whose retrain returns `model` once `gate` opens (immediately by default); counts fits. */
function scriptedFactory(model: Forecaster, backtestMase = 0.5, lstm = false) {
  const requests: RetrainRequest[] = [];
  let active = 0;
  let maxActive = 0;
  let open: () => void = () => {};
  let gate: Promise<void> | null = null;
  const factory: ModelFactory & { requests: RetrainRequest[]; maxActive: () => number; hold(): void; release(): void } = {
    lstm,
    requests,
    maxActive: () => maxActive,
    hold() {
      gate = new Promise((r) => (open = r));
    },
    release() {
      open();
      gate = null;
    },
    async retrain(req: RetrainRequest): Promise<Selected> {
      requests.push(req);
      active++;
      maxActive = Math.max(maxActive, active);
      try {
        if (gate !== null) await gate;
        return { method: model.name, forecaster: model, backtestMase, ranking: [], skipped: [] };
      } finally {
        active--;
      }
    },
  };
  return factory;
}

function planner(h: History, extra: Partial<PlannerOptions> = {}, clock = new FakeClock(t0)) {
  return new Planner({ stepMs, season, horizon, leadSteps: lead, perInstance: { broker: 10, gateway: 40 }, history: () => h.steps, clock, ...extra });
}

/** Steps a planner to selection with `model` installed. */
async function selected(h: History, model: Forecaster, extra: Partial<PlannerOptions> = {}, mase = 0.5) {
  h.fill(selectionMinSteps(season, horizon), truth);
  const factory = scriptedFactory(model, mase);
  const p = planner(h, { models: factory, ...extra });
  await p.step();
  await p.retrainSettled();
  expect(p.report().model.method).toBe('scripted');
  // The step that started selection planned with the cold model: plan again with the installed one.
  await p.step();
  return { p, factory };
}

describe('the plan', () => {
  it('decides t at t − L from the history before it: a different future leaves the plan for t unchanged', async () => {
    // The forecast depends on every value it sees, so any peek at the future would move it.
    const f = (v: SeriesView, h: number) => v.values.reduce((a, b) => a + b, 0) / v.origin + 10 * h;
    const runs = [];
    for (const future of [0, 1000]) {
      const h = new History();
      const model = new Scripted(f);
      const { p } = await selected(h, model);
      const n = h.steps.length;
      const decidedFor = t0 + (n + lead) * stepMs; // current = step n, t = n + L
      const before = p.report().plan.find((e) => e.t === decidedFor)!;
      expect(model.seen.at(-1)).toEqual({ origin: n, length: n });
      for (let k = 0; k < lead; k++) {
        h.push(truth(n + k) + future);
        await p.step();
      }
      expect(p.report().current).toBe(decidedFor);
      runs.push({ before, after: p.report().plan[0]!, desired: p.desired(), ceiling: p.ceilingPerSec() });
    }
    expect(runs[0]!.after).toEqual(runs[0]!.before);
    expect(runs[1]!.after).toEqual(runs[0]!.before);
    expect(runs[1]!.desired).toEqual(runs[0]!.desired);
    expect(runs[1]!.ceiling).toBe(runs[0]!.ceiling);
  });

  it('the entry for t uses the P90 at h = L; headroom, min and max apply; the ceiling has a floor', async () => {
    const h = new History();
    const { p } = await selected(h, new Scripted((_, k) => 100 * (k + 1)), { headroom: 0.5, minInstances: { broker: 3, gateway: 1 }, maxInstances: { broker: 100, gateway: 4 } });
    const r = p.report();
    const p90 = 1.2 * 100 * (lead + 1);
    const entry = r.plan.at(-1)!;
    expect(entry.t).toBe(r.current! + lead * stepMs);
    expect(entry.instances.broker).toBe(Math.ceil((p90 * 1.5) / 10));
    expect(entry.instances.gateway).toBe(4); // ⌈540/40⌉ = 14, cut to the max
    expect(entry.ceilingPerSec).toBeCloseTo(p90 * 1.5, 9);
    expect(r.forecast).toHaveLength(horizon);
    expect(r.forecast[0]).toEqual({ t: r.current, p50: 100, p90: 120, p10: 70 });
    // No decision yet for the current step (taken before the planner ran): the reactive rule, no ceiling.
    expect(p.ceilingPerSec()).toBe(Infinity);
    expect(p.desired().broker).toBe(Math.max(3, Math.ceil((h.steps.at(-1)!.records * 1.5) / 10)));

    const low = new History();
    const { p: q } = await selected(low, new Scripted(() => 0.5), { minInstances: { broker: 3, gateway: 0 } });
    for (let k = 0; k < lead; k++) {
      low.push(1);
      await q.step();
    }
    expect(q.desired()).toEqual({ broker: 3, gateway: 1 });
    expect(q.ceilingPerSec()).toBe(LIMITER_CEILING_MIN);
  });

  it('adds a dead region’s forecast, matched by t, to the plan (not to its own forecast)', async () => {
    let dead: { t: number; p50: number; p90: number; p10: number }[] = [];
    const h = new History();
    const { p } = await selected(h, new Scripted(() => 100), { extraDemand: () => [{ region: 'eu-west', forecast: dead }] });
    const base = p.report().plan.at(-1)!;
    const current = p.report().current!;
    dead = Array.from({ length: horizon }, (_, k) => ({ t: current + k * stepMs, p50: 200, p90: 300, p10: 150 }));
    await p.step();
    const r = p.report();
    const entry = r.plan.at(-1)!;
    expect(entry.t).toBe(base.t);
    expect(entry.ceilingPerSec).toBeCloseTo(120 + 300, 9);
    expect(entry.instances.broker).toBe(instancesFor(420, { perInstance: 10, headroom: 0 }));
    expect(r.forecast[lead]!.p90).toBeCloseTo(120, 9);
    expect(r.extra[lead]).toEqual({ t: entry.t, p50: 200, p90: 300, p10: 150 });
  });
});

describe('cold start', () => {
  it('last_value, then seasonal_naive, then selection: the method says which and backtestMase is null until selection', async () => {
    const h = new History();
    const factory = scriptedFactory(new Scripted(() => 1), 0.7, true);
    const clock = new FakeClock(t0);
    const p = planner(h, { models: factory }, clock);
    expect(p.report().model).toMatchObject({ method: 'none', trainedAt: null, backtestMase: null, liveMase: null, mode: 'predictive' });
    const methods: string[] = [];
    for (let n = 1; n <= selectionMinSteps(season, horizon); n++) {
      h.push(truth(n - 1));
      clock.advance(stepMs);
      await p.step();
      methods.push(p.report().model.method);
      if (n <= season) expect(p.report().model.method).toBe('last_value');
      else if (n < selectionMinSteps(season, horizon)) expect(p.report().model).toMatchObject({ method: 'seasonal_naive', backtestMase: null });
    }
    expect(methods[season]).toBe('seasonal_naive');
    expect(p.report().model.trainedAt).not.toBeNull();
    // The step that reached selection started it; the seasonal model forecast meanwhile.
    expect(factory.requests).toHaveLength(1);
    expect(factory.requests[0]!.candidates).toEqual(['seasonal_naive', 'holt_winters_add', 'last_value']);
    await p.retrainSettled();
    expect(p.report().model).toMatchObject({ method: 'scripted', backtestMase: 0.7, trainedAt: new Date(clock.nowMs()).toISOString() });
    // A week of history brings the LSTM in: one more retraining with it among the candidates.
    h.fill(7 * season, truth);
    await p.step();
    expect(factory.requests).toHaveLength(2);
    expect(factory.requests[1]!.candidates).toContain('lstm');
    await p.close();
  });
});

describe('accuracy watch with fallback', () => {
  it('a forecaster wrong on purpose drives the planner to reactive mode and back', async () => {
    const noise = seededRandom(3);
    const value = (i: number) => truth(i) + 10 * (noise() - 0.5);
    const h = new History().fill(selectionMinSteps(season, horizon), value);
    let factor = 1;
    const model = new Scripted((v, k) => factor * truth(v.origin + k));
    // A large backtest MASE keeps drift out of this test (retraining has its own).
    const { p } = await selected(h, model, {}, 1e6);
    const modes: [string, string][] = [];
    p.on('mode', (mode, why) => modes.push([mode, why]));
    const run = async (steps: number) => {
      for (let k = 0; k < steps; k++) {
        h.push(value(h.steps.length));
        await p.step();
      }
    };
    await run(season + lead);
    expect(p.mode()).toBe('predictive');
    expect(p.ceilingPerSec()).toBeLessThan(Infinity);
    factor = 10;
    await run(season + lead);
    expect(modes.map((m) => m[0])).toEqual(['reactive']);
    expect(modes[0]![1]).toMatch(/worse than seasonal naive/);
    expect(p.report().model.mode).toBe('reactive');
    expect(p.report().model.liveMase).toBeGreaterThan(5);
    expect(p.ceilingPerSec()).toBe(Infinity);
    const last = h.steps.at(-1)!.records;
    expect(p.desired()).toEqual({ broker: Math.ceil(last / 10), gateway: Math.ceil(last / 40) });
    expect(p.report().plan.every((e) => e.ceilingPerSec === Infinity && e.instances.broker === Math.ceil(last / 10))).toBe(true);
    factor = 1;
    await run(2 * (season + lead));
    expect(modes.map((m) => m[0])).toEqual(['reactive', 'predictive']);
    expect(p.report().model.mode).toBe('predictive');
    expect(p.ceilingPerSec()).toBeLessThan(Infinity);
  });
});

describe('retraining', () => {
  it('a schedule tick starts one retraining; two never overlap; a step does not await it', async () => {
    const h = new History();
    const clock = new FakeClock(t0);
    const { p, factory } = await selected(h, new Scripted((v) => v.values[v.origin - 1]!), { retrainEveryMs: 10 * stepMs, clock });
    expect(factory.requests).toHaveLength(1);
    factory.hold();
    for (let k = 0; k < 9; k++) {
      clock.advance(stepMs);
      h.push(truth(h.steps.length));
      await p.step();
    }
    expect(factory.requests).toHaveLength(1);
    clock.advance(stepMs);
    h.push(truth(h.steps.length));
    await p.step(); // the tick: starts one, held open
    expect(factory.requests).toHaveLength(2);
    // Steps go on (not awaiting the held retraining) and start no second one, even past the next tick.
    for (let k = 0; k < 25; k++) {
      clock.advance(stepMs);
      h.push(truth(h.steps.length));
      await p.step();
    }
    expect(p.report().current).toBe(h.steps.at(-1)!.t + stepMs);
    expect(factory.requests).toHaveLength(2);
    expect(factory.maxActive()).toBe(1);
    factory.release();
    await p.retrainSettled();
    clock.advance(stepMs);
    h.push(truth(h.steps.length));
    await p.step();
    expect(factory.requests).toHaveLength(3);
    expect(factory.maxActive()).toBe(1);
    await p.close();
  });

  it('drift past DRIFT_FACTOR × the backtest MASE over a full window starts one retraining', async () => {
    const h = new History();
    const clock = new FakeClock(t0);
    // Twice too high: worse than the backtest's tiny MASE by far, and past seasonal naive too.
    const { p, factory } = await selected(h, new Scripted((v, k) => 2 * truth(v.origin + k)), { clock }, 0.01);
    factory.hold();
    for (let k = 0; k < season + lead - 1; k++) {
      clock.advance(stepMs);
      h.push(truth(h.steps.length) + 1);
      await p.step();
    }
    expect(factory.requests).toHaveLength(1);
    for (let k = 0; k < 3; k++) {
      clock.advance(stepMs);
      h.push(truth(h.steps.length) + 1);
      await p.step();
    }
    expect(factory.requests).toHaveLength(2);
    factory.release();
    await p.retrainSettled();
    expect(p.report().model.liveMase).toBeNull(); // the window restarts with the new model
    await p.close();
  });

  it('close aborts a running retraining and stops the timer; the timer steps at each step boundary', async () => {
    const h = new History().fill(selectionMinSteps(season, horizon), truth);
    const clock = new FakeClock(t0 + 300);
    let signal: AbortSignal | undefined;
    let reads = 0;
    const factory: ModelFactory = {
      lstm: false,
      retrain: (req) => {
        signal = req.signal;
        return new Promise((_, reject) => req.signal.addEventListener('abort', () => reject(new Error('aborted'))));
      },
    };
    const p = planner(h, { models: factory, history: () => (reads++, h.steps) }, clock);
    p.start();
    clock.advance(stepMs - 300 + 99); // the boundary plus 99 ms: stepDelayMs is 100
    expect(reads).toBe(0);
    clock.advance(1);
    expect(reads).toBe(1);
    await new Promise((r) => setImmediate(r));
    clock.advance(stepMs);
    expect(reads).toBe(2);
    expect(signal?.aborted).toBe(false);
    await p.close();
    expect(signal?.aborted).toBe(true);
    clock.advance(5 * stepMs);
    expect(reads).toBe(2);
    expect(clock.pendingTimers()).toBe(0);
  });
});

describe('bad config', () => {
  const h = new History();
  const cases: [string, Partial<PlannerOptions>][] = [
    ['season', { season: 0 }],
    ['leadSteps', { leadSteps: 0 }],
    ['leadSteps', { leadSteps: horizon }],
    ['horizon', { horizon: season + 1 }],
    ['perInstance.broker', { perInstance: { broker: 0, gateway: 1 } }],
    ['perInstance.gateway', { perInstance: { broker: 1, gateway: -5 } }],
    ['headroom', { headroom: -0.1 }],
    ['headroom', { headroom: 11 }],
    ['stepMs', { stepMs: 10 }],
    ['stepMs', { stepMs: 7_200_000 }],
    ['maxInstances.broker', { minInstances: { broker: 5, gateway: 1 }, maxInstances: { broker: 4, gateway: 4 } }],
    ['retrainEveryMs', { retrainEveryMs: 10 }],
  ];
  for (const [key, bad] of cases) {
    it(`${key} = ${JSON.stringify(Object.values(bad)[0])}: INVALID_CONFIG naming ${key}`, () => {
      let err: unknown;
      try {
        planner(h, bad);
      } catch (e) {
        err = e;
      }
      expect(isEdgeqError(err, 'INVALID_CONFIG')).toBe(true);
      expect((err as Error).message).toContain(key);
      expect((err as { details: { key: string } }).details.key).toBe(key);
    });
  }

  it('defaults: H = min(1 h of steps, season), L = 5 min of steps cut to H − 1', () => {
    const p = new Planner({ stepMs: 60_000, season: 1440, perInstance: { broker: 1, gateway: 1 }, history: () => [], models: scriptedFactory(new Scripted(() => 0)) });
    expect(p.options).toMatchObject({ horizon: 60, leadSteps: 5, headroom: 0, retrainEveryMs: 86_400_000 });
    expect(planner(h, { leadSteps: undefined }).options.leadSteps).toBe(horizon - 1);
  });
});
