// Proves the region publisher writes this region's health, load, forecast slot and addresses into
// the mesh state, rates from cumulative counters, a new version only on change or refresh, and an
// unknown health (not a stall) when the cell does not answer in time.
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/core/index.ts';
import { MeshKeys } from './mesh-state.ts';
import { REGION_ENTRY_BYTES_MAX, REGION_HEALTH_TIMEOUT_MS, RegionPublisher } from './region-publisher.ts';
import type { RegionHealth, RegionInfo } from './region-info.ts';
import { FakeMesh } from './test-support.ts';

const HEALTHY: RegionHealth = { cellReady: true, brokersAlive: 3, brokersTotal: 3, underReplicatedPartitions: 0 };

describe('region publisher', () => {
  it('publishes health, ingress rates, the empty forecast slot and the addresses; rewrites only on change or refresh', async () => {
    const clock = new FakeClock();
    const member = new FakeMesh(clock).member('eu-west');
    let totals = { records: 0, bytes: 0 };
    let health = HEALTHY;
    const pub = new RegionPublisher(
      member,
      { health: async () => health, ingressTotals: () => totals, gateways: ['http://127.0.0.1:8081'], brokers: ['127.0.0.1:9102'] },
      { clock, refreshIntervalMs: 10_000 },
    );
    const first = await pub.publish();
    expect(first).toEqual({
      region: 'eu-west',
      health: HEALTHY,
      load: { ingressRecordsPerSec: 0, ingressBytesPerSec: 0, capacityRecordsPerSec: null, headroomRecordsPerSec: null },
      forecast: { kind: 'none' },
      gateways: ['http://127.0.0.1:8081'],
      brokers: ['127.0.0.1:9102'],
    });
    const versionOf = () => member.state().find((e) => e.key === MeshKeys.region('eu-west'))!.version;
    const v1 = versionOf();
    clock.advance(1000);
    await pub.publish(); // the rate becomes 0/s again: nothing changed since the first
    // Two seconds with 3000 records and 300 kB: 1500 records/s.
    clock.advance(2000);
    totals = { records: 3000, bytes: 300_000 };
    const loaded = await pub.publish();
    expect(loaded.load).toMatchObject({ ingressRecordsPerSec: 1500, ingressBytesPerSec: 150_000 });
    const v2 = versionOf();
    expect(v2).toBeGreaterThan(v1);
    clock.advance(1000);
    totals = { records: 4500, bytes: 450_000 };
    await pub.publish(); // same rate, same health: no new version
    expect(versionOf()).toBe(v2);
    clock.advance(10_000);
    totals = { records: 19_500, bytes: 1_950_000 };
    await pub.publish(); // same rate still, but the refresh is due
    expect(versionOf()).toBeGreaterThan(v2);
    health = { ...HEALTHY, brokersAlive: 2, underReplicatedPartitions: 4 };
    expect((member.state()[0]!.value as RegionInfo).health.brokersAlive).toBe(3);
    await pub.publish();
    expect((member.state()[0]!.value as RegionInfo).health).toMatchObject({ brokersAlive: 2, underReplicatedPartitions: 4 });
  });

  it('publishes the forecast slot it is given, and leaves it out rather than pass the mesh value bound', async () => {
    const clock = new FakeClock();
    const member = new FakeMesh(clock).member('eu-west');
    const forecast = { kind: 'forecast' as const, generatedAtMs: 1, t0: 60_000, pointMs: 60_000, p50: [10, 20], p90: [15, 30], p10: [5, 12], plan: { broker: 1, gateway: 1, ceilingPerSec: 30 }, method: 'seasonal_naive', mode: 'predictive' as const };
    let brokers = ['127.0.0.1:9102'];
    const pub = new RegionPublisher(member, { health: async () => HEALTHY, ingressTotals: () => ({ records: 0, bytes: 0 }), forecast: () => forecast, gateways: ['http://127.0.0.1:8081'], get brokers() { return brokers; } }, { clock });
    expect((await pub.publish()).forecast).toEqual(forecast);
    // So many broker addresses that the entry with its forecast would pass REGION_ENTRY_BYTES_MAX.
    brokers = Array.from({ length: 60 }, (_, i) => `127.0.0.1:${10_000 + i}`);
    const info = await pub.publish();
    expect(info.forecast).toEqual({ kind: 'none' });
    expect(Buffer.byteLength(JSON.stringify(info))).toBeGreaterThan(REGION_ENTRY_BYTES_MAX - 400);
  });

  it('reports an unknown health when the cell does not answer in time, without stalling', async () => {
    const clock = new FakeClock();
    const member = new FakeMesh(clock).member('ap-south');
    const pub = new RegionPublisher(member, { health: () => new Promise<RegionHealth>(() => undefined), ingressTotals: () => ({ records: 0, bytes: 0 }), gateways: [], brokers: [] }, { clock });
    const published = pub.publish();
    clock.advance(REGION_HEALTH_TIMEOUT_MS);
    expect((await published).health).toEqual({ cellReady: false, brokersAlive: 0, brokersTotal: 0, underReplicatedPartitions: 0 });
  });
});
