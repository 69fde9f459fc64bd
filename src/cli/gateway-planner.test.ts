// Proves the planner settings of `edgeq gateway`: defaults, flags over the environment
// (EDGEQ_PLANNER*, which `edgeq dev` hands its gateways), every bad value an INVALID_CONFIG naming
// the flag before anything is opened (exit code 2), a lead or season the planner refuses for the
// history's step named by the flag the user set, and the pre-warm level a report gives the limiter.
import { describe, expect, it } from 'vitest';
import { EdgeqError } from '../core/index.ts';
import { PLAN_HEADROOM_DEFAULT, PLAN_INSTANCES_MAX, type PlannerReport } from '../../forecast/planner/index.ts';
import { PLANNER_LEAD_MS_DEFAULT, PLANNER_PER_INSTANCE_DEFAULT, PLANNER_RETRAIN_MS_DEFAULT, plannerSettings } from './planner-flags.ts';
import { checkPlannerSettings, prewarmLevel } from './gateway-planner.ts';
import { gatewayRefusal } from './test-support.ts';

function thrown(fn: () => unknown): EdgeqError {
  try {
    fn();
  } catch (e) {
    return e as EdgeqError;
  }
  throw new Error('expected a throw');
}

describe('plannerSettings', () => {
  it('defaults: on, a 5-minute lead, a day of steps, 20 000 records/s per instance, no headroom, pre-warm on', () => {
    expect(plannerSettings({}, {})).toEqual({
      leadMs: PLANNER_LEAD_MS_DEFAULT,
      seasonSteps: null,
      perInstance: { broker: PLANNER_PER_INSTANCE_DEFAULT, gateway: PLANNER_PER_INSTANCE_DEFAULT },
      headroom: PLAN_HEADROOM_DEFAULT,
      maxInstances: PLAN_INSTANCES_MAX,
      retrainEveryMs: PLANNER_RETRAIN_MS_DEFAULT,
      prewarm: true,
    });
  });

  it('reads the environment, a flag wins over its variable, and off means no planner', () => {
    const env = { EDGEQ_PLANNER_LEAD_MS: '2000', EDGEQ_PLANNER_SEASON_STEPS: '48', EDGEQ_PLANNER_PER_GATEWAY: '300', EDGEQ_PLANNER_HEADROOM: '0.25', EDGEQ_PLANNER_PREWARM: 'off' };
    expect(plannerSettings({}, env)).toMatchObject({ leadMs: 2000, seasonSteps: 48, perInstance: { gateway: 300 }, headroom: 0.25, prewarm: false });
    expect(plannerSettings({ plannerLeadMs: '3000', plannerPrewarm: 'on' }, env)).toMatchObject({ leadMs: 3000, prewarm: true });
    expect(plannerSettings({}, { EDGEQ_PLANNER: 'off' })).toBeNull();
    expect(thrown(() => plannerSettings({}, { EDGEQ_PLANNER_HEADROOM: '-1' })).message).toMatch(/^EDGEQ_PLANNER_HEADROOM \(--planner-headroom\) must be a fraction in \[0, 10\]/);
  });

  it('names the flag when the planner refuses a lead or season for the step', () => {
    const season20 = plannerSettings({ plannerSeasonSteps: '20' }, {})!;
    // The default 5-minute lead is 300 one-second steps: beyond a 20-step horizon.
    const e = thrown(() => checkPlannerSettings(season20, 1000));
    expect([e.code, e.details['key']]).toEqual(['INVALID_CONFIG', '--planner-lead-ms']);
    expect(e.message).toContain('300 steps of 1000 ms');
    expect(thrown(() => checkPlannerSettings(plannerSettings({}, {})!, 500)).details['key']).toBe('--ingress-step-ms');
    expect(() => checkPlannerSettings(plannerSettings({ plannerSeasonSteps: '20', plannerLeadMs: '2000' }, {})!, 1000)).not.toThrow();
    expect(() => checkPlannerSettings(plannerSettings({}, {})!, 60_000)).not.toThrow();
  });
});

describe('prewarmLevel', () => {
  const report = (mode: 'predictive' | 'reactive', ceilings: number[]): PlannerReport => ({
    step: 1000,
    current: 10_000,
    forecast: [],
    extra: [],
    plan: ceilings.map((c, i) => ({ t: 10_000 + i * 1000, instances: { broker: 1, gateway: 1 }, ceilingPerSec: c })),
    model: { method: 'seasonal_naive', trainedAt: null, backtestMase: null, liveMase: null, mode },
  });

  it('is the larger of the current and the next step\'s level, so a ramp is lifted before it begins', () => {
    expect(prewarmLevel(report('predictive', [100, 900, 5000]))).toBe(900);
    expect(prewarmLevel(report('predictive', [800, 200, 200]))).toBe(800);
  });

  it('is null in reactive mode or with no decision yet, and kept within the limiter\'s bounds', () => {
    expect(prewarmLevel(report('reactive', [100, 900]))).toBeNull();
    expect(prewarmLevel({ ...report('predictive', []), current: null })).toBeNull();
    expect(prewarmLevel(report('predictive', [1, 2]))).toBe(10);
  });
});

describe('edgeq gateway refuses bad planner flags', () => {
  for (const [flag, value] of [
    ['--planner', 'maybe'],
    ['--planner-lead-ms', '0'],
    ['--planner-lead-ms', 'soon'],
    ['--planner-season-steps', '1'],
    ['--planner-per-broker', '0'],
    ['--planner-per-gateway', '-3'],
    ['--planner-headroom', '11'],
    ['--planner-headroom', 'x'],
    ['--planner-max-instances', '0'],
    ['--planner-retrain-ms', '5'],
    ['--planner-prewarm', 'yes'],
  ] as const) {
    it(`${flag} ${value}: INVALID_CONFIG naming ${flag}`, async () => {
      const stderr = await gatewayRefusal([flag, value]);
      expect(stderr).toContain('INVALID_CONFIG');
      expect(stderr).toContain(flag);
    });
  }

  it('a 1-second step with the default lead and a 20-step season: INVALID_CONFIG naming --planner-lead-ms', async () => {
    expect(await gatewayRefusal(['--ingress-step-ms', '1000', '--planner-season-steps', '20'])).toContain('--planner-lead-ms');
  });
});
