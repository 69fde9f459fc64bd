// Link latency as the mesh reports it (GET /v1/mesh members[].rttMs, the dashboard's mesh panel):
// each member's smoothed round trip of its direct probes, per member, on a simulated network
// whose links have known one-way delays; it follows a lasting change and ignores itself.
import { describe, expect, it } from 'vitest';
import { testSeed } from '../../src/testing/index.ts';
import { SimCluster } from './sim-cluster.ts';

describe('link latency in the mesh view', () => {
  it('is the smoothed round trip of direct probes per member, and follows a lasting change', async () => {
    const c = await SimCluster.create({ members: 3, seed: testSeed('link-rtt'), delayMs: 5 });
    const [a, b, far] = c.addresses as [string, string, string];
    // a ↔ far: 60 ms each way (a 120 ms round trip); a ↔ b: the 5 ms default (10 ms).
    c.network.setLink(a, far, { delayMs: 60 });
    c.network.setLink(far, a, { delayMs: 60 });
    // The members joined (inside create) over the 5 ms default, so the far member's SRTT starts
    // near 10 ms and moves 1/8 of the way to 120 per probe: off by 110 × (7/8)^n after n probes.
    // Each member is probed about once a second here (500 ms interval, 2 others), so 60 s leaves
    // 110 × (7/8)^55 < 0.07 ms (30 s left 2.3 ms on some seeds).
    c.run(60_000);
    const view = () => new Map(c.agents[0]!.members().map((m) => [m.member, m.rttMs]));
    let rtt = view();
    expect(rtt.get(c.ids[0]!)).toBeNull();
    // Exact delays, no jitter: every direct sample is the round trip (the sim's handling adds none).
    expect(rtt.get(c.ids[1]!)).toBeCloseTo(10, 0);
    expect(rtt.get(c.ids[2]!)).toBeCloseTo(120, 0);

    // The far link gets faster: after ~55 more probes SRTT is within 110 × (7/8)^55 of the new 10 ms.
    c.network.setLink(a, far, { delayMs: 5 });
    c.network.setLink(far, a, { delayMs: 5 });
    c.run(60_000);
    rtt = view();
    expect(rtt.get(c.ids[2]!)).toBeGreaterThanOrEqual(10);
    expect(rtt.get(c.ids[2]!)).toBeLessThan(12);
    await c.stop();
  });
});
