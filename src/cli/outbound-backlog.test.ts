// Proves the replication backlog the gateway's limiter reads from the mesh: per other region, this region's own heads minus what that region applied of this origin, summed over live global topics' partitions; the region furthest behind counts; deleted entries, dead topics and other origins are ignored.
import { describe, expect, it } from 'vitest';
import { cursorKey } from '../../gossip/exchange/index.ts';
import { outboundBacklog } from './gateway-mesh.ts';

const entry = (region: string, topic: string, partition: number, head: number, applied: Record<string, number>, deleted = false) => ({ key: cursorKey(region, topic, partition), value: { head, applied }, deleted });

describe('outboundBacklog', () => {
  it('is the largest backlog of any other region', () => {
    const entries = [
      entry('us', 'orders', 0, 99, {}),
      entry('us', 'orders', 1, 49, {}),
      entry('eu', 'orders', 0, 10, { us: 89 }), // 10 behind on p0
      entry('eu', 'orders', 1, 10, { us: 49 }), // caught up on p1
      entry('ap', 'orders', 0, 10, { us: 99, eu: 3 }), // caught up on p0, nothing of p1 yet: 50 behind
      entry('us', 'gone', 0, 1_000, {}), // not a live topic
      entry('eu', 'orders', 2, 0, { us: -1 }, true), // deleted
      { key: 'region/us', value: { region: 'us' } },
    ];
    expect(outboundBacklog(entries, 'us', ['eu', 'ap'], new Set(['orders']))).toBe(50);
    expect(outboundBacklog(entries, 'us', ['eu'], new Set(['orders']))).toBe(10);
    expect(outboundBacklog(entries, 'us', [], new Set(['orders']))).toBe(0);
  });
});
