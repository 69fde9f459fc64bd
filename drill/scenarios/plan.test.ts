// Proves a drill request is checked whole before anything runs: unknown scenarios and regions, scenarios between regions on a 1-region deployment, cell failovers on a 1-broker cell, and bad durations, rates and seeds are INVALID_ARGUMENT naming the field; a good request is scheduled inside its duration with the seed's region when none is named.
import { describe, expect, it } from 'vitest';
import type { Deployment } from '../faults/index.ts';
import { SCENARIOS } from '../runner/types.ts';
import { planDrill, FAULT_AT_SHARE, FAULT_HOLD_SHARE } from './plan.ts';

function deployment(regions: string[], brokers: number): Deployment {
  return {
    dataDir: '/d',
    faultStorage: 'none',
    regions: regions.map((region, i) => ({
      region,
      gateway: `http://127.0.0.1:${8080 + i}`,
      gatewayName: `${region}/gateway`,
      arbiter: { name: `${region}/arbiter`, address: `127.0.0.1:${7090 + i}`, dataDir: `/d/${region}/arbiter` },
      brokers: Array.from({ length: brokers }, (_, b) => ({ name: `${region}/broker-${b + 1}`, id: b + 1, address: `127.0.0.1:${9092 + 10 * i + b}`, admin: '', dataDir: `/d/${region}/broker-${b + 1}` })),
    })),
  };
}

const invalid = (field: string, message: RegExp) => expect.objectContaining({ code: 'INVALID_ARGUMENT', details: { field }, message: expect.stringMatching(message) });

describe('planDrill', () => {
  const geo = deployment(['us-east', 'eu-west'], 3);
  const one = deployment(['us-east'], 3);

  it('schedules the fault inside the duration, in the named region or the seed\'s', () => {
    const p = planDrill({ scenario: 'leader-kill', region: 'eu-west', durationS: 10, rate: 5, seed: 42 }, geo);
    expect(p).toMatchObject({ scenario: 'leader-kill', region: 'eu-west', durationMs: 10_000, rate: 5, seed: 42 });
    expect(p.faults).toHaveLength(1);
    expect(p.faults[0]).toMatchObject({ region: 'eu-west', atMs: 10_000 * FAULT_AT_SHARE, holdMs: 10_000 * FAULT_HOLD_SHARE });
    expect(p.faults[0]!.fault.name).toBe('leader-kill');
    expect(planDrill({ scenario: 'gateway-kill' }, geo, () => 0.9).region).toBe('eu-west');
    expect(planDrill({ scenario: 'gateway-kill' }, geo, () => 0.1).region).toBe('us-east');
    for (const s of SCENARIOS) expect(planDrill({ scenario: s, region: 'us-east', durationS: 5 }, geo).faults[0]!.fault.name).toBe(s);
  });

  it('refuses bad input naming the field', () => {
    const cases: [Parameters<typeof planDrill>[0], Deployment, string, RegExp][] = [
      [{ scenario: 'disk-melt' }, geo, 'scenario', /unknown scenario "disk-melt".*broker-kill, leader-kill/],
      [{ scenario: 'leader-kill', region: 'mars' }, geo, 'region', /unknown region "mars".*us-east, eu-west/],
      [{ scenario: 'region-isolate', region: 'us-east' }, one, 'region', /acts between regions.*one region/],
      [{ scenario: 'link-degrade' }, one, 'region', /acts between regions/],
      [{ scenario: 'region-kill' }, one, 'region', /acts between regions/],
      [{ scenario: 'leader-kill', region: 'us-east' }, deployment(['us-east'], 1), 'region', /1 broker/],
      [{ scenario: 'broker-kill' }, deployment(['us-east'], 1), 'region', /1 broker/],
      [{ scenario: 'leader-kill', durationS: -5 }, geo, 'durationS', /whole number of seconds/],
      [{ scenario: 'leader-kill', durationS: 0 }, geo, 'durationS', /whole number/],
      [{ scenario: 'leader-kill', durationS: 2.5 }, geo, 'durationS', /whole number/],
      [{ scenario: 'leader-kill', durationS: 86_400 }, geo, 'durationS', /3600/],
      [{ scenario: 'leader-kill', rate: 0 }, geo, 'rate', /records\/s/],
      [{ scenario: 'leader-kill', rate: -1 }, geo, 'rate', /records\/s/],
      [{ scenario: 'leader-kill', rate: Number.NaN }, geo, 'rate', /records\/s/],
      [{ scenario: 'leader-kill', seed: -1 }, geo, 'seed', /seed/],
      [{ scenario: 'leader-kill', seed: 1.5 }, geo, 'seed', /seed/],
    ];
    for (const [req, d, field, message] of cases) {
      let thrown: unknown = null;
      try {
        planDrill(req, d);
      } catch (err) {
        thrown = err;
      }
      expect(thrown, JSON.stringify(req)).toEqual(invalid(field, message));
    }
  });
});
