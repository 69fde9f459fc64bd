// Proves a simulated mesh replays exactly from its seed (the same seed, the same run down to every
// counter), and that another seed gives another run.
import { describe, expect, it } from 'vitest';
import { testSeed } from '../../src/testing/index.ts';
import { SimCluster } from './sim-cluster.ts';

async function run(seed: number): Promise<string> {
  const c = await SimCluster.create({ members: 10, seed, lossRate: 0.05, jitterMs: 10 });
  c.agents[2]!.setState('k', { seed });
  c.run(20_000);
  c.crash(7);
  c.runUntil(() => c.allKnowGone(7), 30_000, 10);
  await c.restart(7);
  c.run(10_000);
  const fingerprint = JSON.stringify({
    elapsed: c.elapsedMs,
    net: c.network.stats,
    agents: c.agents.map((a) => ({ stats: a!.stats(), members: a!.members().map((m) => [m.member, m.state, m.incarnation, m.lastHeardMs, m.phi]), state: a!.state() })),
    falseSuspicions: c.falseSuspicions,
  });
  await c.stop();
  return fingerprint;
}

describe('SimCluster', () => {
  it('replays a run exactly from its seed', async () => {
    const seed = testSeed('sim-replay');
    const first = await run(seed);
    expect(await run(seed)).toBe(first);
    expect(await run(seed + 1)).not.toBe(first);
  });
});
