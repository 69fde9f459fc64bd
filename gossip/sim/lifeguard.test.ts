// Proves Lifeguard's worth in seeded simulations: with a slow member (its message handling
// delayed, as under CPU starvation) plain SWIM accuses healthy members again and again and kills
// some, while Lifeguard cuts false suspicions of healthy members at least 20x and kills none; and
// with 200 members at 5% loss there are no false deaths and every crash is known within the
// bound memberlist's suspicion timeout formula gives for the same settings.
import { afterAll, describe, expect, it } from 'vitest';
import { testSeed } from '../../src/testing/index.ts';
import { DEFAULT_MESH_CONFIG } from '../agent/config.ts';
import { detectionBoundMs } from './expectations.ts';
import { SimCluster } from './sim-cluster.ts';

const rows: Record<string, unknown>[] = [];
afterAll(() => {
  // eslint-disable-next-line no-console
  console.table(rows);
});

/** The slow member handles each message 0-1000 ms late, in arrival order: it runs ~1 s behind, twice the probe interval. */
const SLOW = { minMs: 0, maxMs: 1_000 };
const SLOW_RUN_MS = 10 * 60_000;

async function slowRun(lifeguard: boolean, seed: number) {
  const c = await SimCluster.create({ members: 10, seed, config: { lifeguard } });
  c.slow(9, SLOW);
  c.run(SLOW_RUN_MS);
  const hours = SLOW_RUN_MS / 3_600_000;
  const result = {
    lifeguard,
    seed,
    falseSuspicionsOfHealthy: c.falseSuspicions.filter((e) => !e.targetSlow).length,
    falseSuspicionsOfHealthyBySlow: c.falseSuspicions.filter((e) => !e.targetSlow && e.bySlow).length,
    falseSuspicionsOfSlow: c.falseSuspicions.filter((e) => e.targetSlow).length,
    falseSuspicionsPerMemberHour: +(c.falseSuspicions.length / 10 / hours).toFixed(1),
    falseDeathsOfHealthy: c.falseDeaths.filter((e) => !e.targetSlow).length,
    falseDeathsOfSlow: c.falseDeaths.filter((e) => e.targetSlow).length,
    slowMemberHealth: c.agents[9]!.health(),
  };
  rows.push(result);
  await c.stop();
  return result;
}

describe('Lifeguard', () => {
  it('with a slow member: ≥ 20x fewer false suspicions of healthy members than plain SWIM, and no false deaths of them', async () => {
    const seed = testSeed('lifeguard-slow');
    const off = await slowRun(false, seed);
    const on = await slowRun(true, seed);
    // The scenario bites: plain SWIM's slow member accuses healthy members every few probes.
    expect(off.falseSuspicionsOfHealthy).toBeGreaterThanOrEqual(200);
    expect(off.falseSuspicionsOfHealthyBySlow).toBeGreaterThan(off.falseSuspicionsOfHealthy * 0.9);
    expect(on.falseSuspicionsOfHealthy * 20).toBeLessThanOrEqual(off.falseSuspicionsOfHealthy);
    // The slow member knows it is slow: its health multiplier is up.
    expect(on.slowMemberHealth).toBeGreaterThan(0);
    expect(on.falseDeathsOfHealthy).toBe(0);
    expect(off.falseDeathsOfHealthy).toBeGreaterThan(0);
    // All suspicions, the slow member's own included (it is 1 s behind: probes of it do fail).
    expect(on.falseSuspicionsOfHealthy + on.falseSuspicionsOfSlow).toBeLessThan(off.falseSuspicionsOfHealthy + off.falseSuspicionsOfSlow);
  }, 60_000);

  it('200 members at 5% loss: no false deaths, crashes known within memberlist’s bound', async () => {
    const seed = testSeed('lifeguard-200');
    const c = await SimCluster.create({ members: 200, seed, lossRate: 0.05 });
    c.run(60_000);
    const bound = detectionBoundMs(DEFAULT_MESH_CONFIG, 200);
    const detections: (number | null)[] = [];
    for (const victim of [17, 123]) {
      c.crash(victim);
      detections.push(c.runUntil(() => c.allKnowGone(victim), bound + 5_000, 10));
    }
    rows.push({ members: 200, lossRate: 0.05, seed, simulatedMs: c.elapsedMs, detections: detections.join(' '), boundMs: bound, falseSuspicions: c.falseSuspicions.length, falseDeaths: c.falseDeaths.length });
    await c.stop();
    expect(c.falseDeaths).toEqual([]);
    for (const d of detections) {
      expect(d).not.toBeNull();
      expect(d!).toBeLessThanOrEqual(bound);
    }
  }, 60_000);
});
