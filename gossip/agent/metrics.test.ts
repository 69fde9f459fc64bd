// Proves registerMeshMetrics exposes the agent in a caller's prom-client registry: members by
// state, phi per member, probe RTTs, suspicions, deaths, messages and bytes, and drops by reason,
// each moving with what the agent did.
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { testSeed } from '../../src/testing/index.ts';
import { SimCluster } from '../sim/sim-cluster.ts';
import { registerMeshMetrics } from './metrics.ts';

function value(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  if (line === undefined) throw new Error(`no series ${series} in:\n${text}`);
  return Number(line.slice(series.length + 1));
}

describe('registerMeshMetrics', () => {
  it('reports the agent in the given registry', async () => {
    // A long suspicion (10 × 500 ms), so a cut-off member stays suspect while its phi climbs.
    const c = await SimCluster.create({ members: 4, seed: testSeed('mesh-metrics'), config: { suspicionMult: 10 } });
    const registry = new Registry();
    const stop = registerMeshMetrics(registry, c.agents[0]!);
    c.run(5_000);
    c.crash(3);
    expect(c.runUntil(() => c.allKnowGone(3), 30_000)).not.toBeNull();
    c.network.inject(c.addresses[0]!, Buffer.alloc(2000));
    const text = await registry.metrics();
    expect(value(text, 'edgeq_mesh_members{state="alive"}')).toBe(3);
    expect(value(text, 'edgeq_mesh_members{state="dead"}')).toBe(1);
    expect(value(text, 'edgeq_mesh_members{state="left"}')).toBe(0);
    expect(value(text, 'edgeq_mesh_drops_total{reason="oversized"}')).toBe(1);
    expect(value(text, 'edgeq_mesh_drops_total{reason="bad-mac"}')).toBe(0);
    expect(value(text, 'edgeq_mesh_probes_total')).toBe(c.agents[0]!.stats().probes);
    expect(value(text, 'edgeq_mesh_probes_total')).toBeGreaterThan(5);
    expect(value(text, 'edgeq_mesh_messages_sent_total')).toBeGreaterThan(0);
    expect(value(text, 'edgeq_mesh_bytes_received_total')).toBe(c.agents[0]!.stats().bytesReceived);
    expect(value(text, 'edgeq_mesh_probe_rtt_seconds_count')).toBeGreaterThan(0);
    // 25 ms each way on the simulated links: every RTT is at least 50 ms.
    expect(value(text, 'edgeq_mesh_probe_rtt_seconds_bucket{le="0.025"}')).toBe(0);
    expect(text).toMatch(/^edgeq_mesh_member_phi\{member="m1",region="region-1"\} [0-9.e+-]+$/m);
    expect(text).not.toMatch(/edgeq_mesh_member_phi\{member="m3"/);
    expect(value(text, 'edgeq_mesh_health_score')).toBe(0);
    expect(value(text, 'edgeq_mesh_members_phi_over_threshold')).toBe(0);
    // Cut m1 off: while it is suspected its silence drives its phi past the threshold.
    c.partition([1], [0, 2]);
    expect(c.runUntil(() => c.agents[0]!.member('m1')!.phi >= 8, 10_000)).not.toBeNull();
    expect(c.agents[0]!.member('m1')!.state).toBe('suspect');
    expect(value(await registry.metrics(), 'edgeq_mesh_members_phi_over_threshold')).toBe(1);
    stop();
    await c.stop();
  });
});
