// Proves, in seeded simulations (fake clock, simulated network) of 3, 10, 50 and 200 members at
// 0%, 1% and 5% loss, that a crashed member is known dead by every member within the detection
// bound of memberlist's formula for the same settings, that no live member is declared dead,
// that without loss no live member is even suspected, and that after a 50/50 partition heals
// every member has one view within the heal bound (200 members: at 5% loss only, the costliest
// case, to keep the suite fast; bench:mesh:sim runs every cell). Prints each cell's figures.
import { afterAll, describe, expect, it } from 'vitest';
import { testSeed } from '../../src/testing/index.ts';
import { DEFAULT_MESH_CONFIG } from '../agent/config.ts';
import { detectionBoundMs, healBoundMs, memberlistSuspicion } from './expectations.ts';
import { SimCluster } from './sim-cluster.ts';

const ONE_WAY_MS = 25;
/** Simulated time of the steady phase before the crash (false suspicions and deaths are counted over it). */
const STEADY_MS = { 3: 60_000, 10: 60_000, 50: 30_000, 200: 15_000 } as Record<number, number>;
/** Bound on waiting for each side of a partition to hold the other dead. */
const SPLIT_MS_MAX = 120_000;

const rows: Record<string, unknown>[] = [];
afterAll(() => {
  // eslint-disable-next-line no-console
  console.table(rows);
});

describe('simulated mesh', () => {
  for (const members of [3, 10, 50, 200]) {
    for (const lossRate of [0, 0.01, 0.05]) {
      it(`${members} members, ${lossRate * 100}% loss: detection, no false deaths${members === 200 && lossRate < 0.05 ? '' : ', heal'}`, async () => {
        const seed = testSeed(`sim-${members}-${lossRate}`);
        const c = await SimCluster.create({ members, seed, lossRate, delayMs: ONE_WAY_MS });
        const startMs = c.elapsedMs;
        c.run(STEADY_MS[members]!);

        const victim = members - 1;
        c.crash(victim);
        const bound = detectionBoundMs(DEFAULT_MESH_CONFIG, members);
        const detectMs = c.runUntil(() => c.allKnowGone(victim), bound + 5_000, 10);
        const measuredMs = c.elapsedMs - startMs;
        const falseSuspicions = c.falseSuspicions.length;
        const falseDeaths = c.falseDeaths.length;

        const row: Record<string, unknown> = {
          members,
          lossRate,
          seed,
          detectMs,
          detectBoundMs: bound,
          suspicionMinMs: memberlistSuspicion(DEFAULT_MESH_CONFIG, members).minMs,
          falseSuspicionsPerMemberHour: +(falseSuspicions / members / (measuredMs / 3_600_000)).toFixed(1),
          falseDeaths,
        };
        rows.push(row);
        expect(detectMs, JSON.stringify(row)).not.toBeNull();
        expect(detectMs!).toBeLessThanOrEqual(bound);
        expect(falseDeaths).toBe(0);
        if (lossRate === 0) expect(falseSuspicions).toBe(0);
        if (members === 200 && lossRate < 0.05) return void (await c.stop());

        // A 50/50 split of the live members, held until each side holds the other dead.
        const live = c.live();
        const a = live.slice(0, Math.floor(live.length / 2));
        const b = live.slice(a.length);
        c.partition(a, b);
        const seesDead = (from: number[], to: number[]) => from.every((i) => to.every((j) => c.agents[i]!.memberStatus(c.ids[j]!)?.state === 'dead'));
        const splitMs = c.runUntil(() => seesDead(a, b) && seesDead(b, a), SPLIT_MS_MAX, 100);
        c.heal();
        const healMs = c.runUntil(() => c.converged(), 30_000, 10);
        row.splitMs = splitMs;
        row.healMs = healMs;
        row.healBoundMs = healBoundMs(DEFAULT_MESH_CONFIG, members, ONE_WAY_MS);
        await c.stop();
        expect(splitMs, 'both sides of the partition held the other dead').not.toBeNull();
        expect(healMs, JSON.stringify(row)).not.toBeNull();
        expect(healMs!).toBeLessThanOrEqual(row.healBoundMs as number);
      }, 60_000);
    }
  }
});
