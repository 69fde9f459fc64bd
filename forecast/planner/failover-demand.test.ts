// Failover awareness: a region whose members are all dead (or left) hands its forecast, split
// evenly, to the regions still alive; a suspect one, or one without a forecast, hands nothing.
import { describe, expect, it } from 'vitest';
import { failoverDemand, type FailoverMeshView } from './failover-demand.ts';

// No p10 here: a summary as a peer from before the lower band publishes it, read with its band at the P50.
const forecast = { kind: 'forecast', generatedAtMs: 1, t0: 600_000, pointMs: 60_000, p50: [100, 200], p90: [150, 300], plan: { broker: 1, gateway: 1, ceilingPerSec: 300 }, method: 'seasonal_naive', mode: 'predictive' };

function view(states: Record<string, 'alive' | 'suspect' | 'dead' | 'left'>): FailoverMeshView {
  return {
    self: { region: 'eu' },
    members: Object.entries(states).map(([region, state]) => ({ region, state })),
    regions: [
      { region: 'eu', forecast },
      { region: 'us', forecast },
      { region: 'ap', forecast },
      { region: 'sa', forecast: { kind: 'none' } },
    ],
  };
}

describe('failover demand', () => {
  it('adds nothing while every region has a live member', () => {
    expect(failoverDemand(view({ eu: 'alive', us: 'alive', ap: 'suspect', sa: 'alive' }), 60_000)).toEqual([]);
  });

  it('splits a dead region\'s forecast evenly over the regions still up', () => {
    const extra = failoverDemand(view({ eu: 'alive', us: 'alive', ap: 'dead', sa: 'left' }), 60_000);
    // sa is down too but published no forecast: only ap's is added, half of it here (eu and us are up).
    expect(extra).toEqual([{ region: 'ap', forecast: [{ t: 600_000, p50: 50, p90: 75, p10: 50 }, { t: 660_000, p50: 100, p90: 150, p10: 100 }] }]);
  });

  it('takes the whole of it when this is the only region left', () => {
    const extra = failoverDemand(view({ us: 'dead', ap: 'left', sa: 'dead' }), 60_000);
    expect(extra.map((e) => e.region).sort()).toEqual(['ap', 'us']);
    expect(extra[0]!.forecast[1]).toEqual({ t: 660_000, p50: 200, p90: 300, p10: 200 });
  });

  it('ignores a malformed forecast from another region', () => {
    const v = view({ us: 'dead' });
    const bad = { ...v, regions: [{ region: 'us', forecast: { ...forecast, p50: 'x' } }] };
    expect(failoverDemand(bad, 60_000)).toEqual([]);
  });
});
