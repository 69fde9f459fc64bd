// Proves that every failing round the fault campaign found stays fixed: each seed is replayed as
// the campaign replays it (`npm run chaos -- --round-seed X`): its schedule of faults over the
// campaign's deployment (3 regions of 3 brokers, the power-loss storage, flush policy sync), the
// checked workload, and a pass under the sync guarantee (0 acknowledged records lost, 0
// reordered, 0 divergent offsets, duplicates only of indeterminate requests).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DevControlDriver, type Deployment } from '../../drill/faults/index.ts';
import { describePlan, roundSchedule, runRound } from '../../drill/chaos/index.ts';
import { DEV_REGIONS_PORT_SPAN, freeRange, startDevRegions, stopAllDevs } from '../helpers/dev-process.ts';
import { Geo } from '../helpers/geo.ts';
import { cleanupTempDirs, tempDir } from '../helpers/tmp.ts';

/**
 * The round seeds, each with what it found and the commit that fixed it. Rounds of the first
 * campaign (stop 22) that failed on convergence within the round's bound are here too: some of
 * those were the session fault below, and all of them must pass now.
 */
const SEEDS: readonly [seed: number, finding: string][] = [
  [197380189, 'two regions shared an origin-fetch session: every other record of an origin missing in each (fetch sessions are per connection)'],
  [3955302380, 'acknowledged global records missing in another region after the round (first campaign)'],
  [1329355916, 'acknowledged global records missing in another region after the round (first campaign)'],
  [980677980, 'global records missing after a whole cell lost power (first campaign)'],
  [1496618717, 'global records missing after corrupted followers (first campaign)'],
  [4043048395, 'global records missing after a broker kill (first campaign)'],
  [2662413743, "a broker's start after its whole cell lost power outran the supervisor's 30 s (now 120 s); a later run of the round saw 3 records out of order per origin, not seen again in replays"],
];

/**
 * Bound on one round: its 10 s workload, the recovery wait (≤ 60 s), convergence (≤ 60 s) and
 * the check; a round takes 20-30 s on a quiet machine.
 */
const ROUND_TEST_MS = 180_000;

let driver: DevControlDriver;
let deployment: Deployment;

beforeAll(async () => {
  const dev = startDevRegions(await tempDir('edgeq-chaos-seeds-'), await freeRange(DEV_REGIONS_PORT_SPAN), {
    regions: '3',
    brokersPerRegion: 3,
    env: { EDGEQ_FAULT_STORAGE: 'power-loss', EDGEQ_LOG__FLUSH_POLICY: 'sync' },
  });
  const ready = await dev.ready;
  const geo = new Geo(ready);
  await geo.waitForExchanges(120_000);
  driver = await DevControlDriver.connect(ready.control);
  deployment = await driver.deployment();
}, 300_000);

afterAll(async () => {
  await stopAllDevs();
  await cleanupTempDirs();
});

describe('the campaign rounds that failed, replayed by their seeds', () => {
  for (const [seed, finding] of SEEDS) {
    it(`round ${seed} passes (found: ${finding})`, async () => {
      const r = await runRound({ driver, deployment, roundSeed: seed, policy: 'sync' });
      console.log(`[chaos-seed ${seed}] ${r.verdict.verdict} [${r.faults}] acked ${r.run.report.acked} converge ${r.run.report.convergeMs} ${r.verdict.findings.join('; ')}`);
      // The schedule is the seed's: the round replays what the campaign ran.
      expect(r.faults).toBe(describePlan(roundSchedule(seed, deployment).plan));
      expect(r.verdict.findings).toEqual([]);
      expect(r.verdict.verdict).toBe('pass');
      expect(r.run.report).toMatchObject({ lost: 0, reordered: 0, divergentOffsets: 0 });
      expect(r.run.report.acked).toBeGreaterThan(100);
    }, ROUND_TEST_MS);
  }
});
