// Proves the multi-region deployment's shape is worked out and checked before anything starts:
// default and named regions, the port layout, and a typed error for every bad input.
import { describe, expect, it } from 'vitest';
import { isEdgeqError } from '../../core/index.ts';
import { DEFAULT_REGIONS, parseRegions, planTopology, portsOf } from './topology.ts';

function refusal(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (isEdgeqError(err, 'INVALID_CONFIG')) return err.message;
    throw err;
  }
  throw new Error('no error');
}

describe('dev topology', () => {
  it('runs three regions by default, with the single-region ports for the first', () => {
    const t = planTopology({});
    expect(t.regions.map((r) => r.name)).toEqual(['us-east', 'eu-west', 'ap-south']);
    expect(t.regions.map((r) => r.gatewayPort)).toEqual([8080, 8081, 8082]);
    expect(t.regions[0]!.brokerPorts).toEqual([9092, 9093, 9094]);
    expect(t.regions[1]!.brokerPorts).toEqual([9102, 9103, 9104]);
    expect(t.regions[2]!.adminPorts).toEqual([9212, 9213, 9214]);
    expect(t.regions.map((r) => r.meshPort)).toEqual([7946, 7947, 7948]);
    expect(t.controlPort).toBe(8090);
    expect(t.wanLatencyMs).toBe(25);
    expect(t.regions[1]!.dataDir).toBe('data/eu-west');
    // No two things on one port.
    const ports = portsOf(t).map((p) => p.port);
    expect(new Set(ports).size).toBe(ports.length);
  });

  it('takes a count, a list of names, brokers per region and base ports', () => {
    expect(parseRegions('1')).toEqual(['us-east']);
    expect(parseRegions(String(DEFAULT_REGIONS.length))).toEqual(DEFAULT_REGIONS);
    expect(parseRegions('tokyo, osaka')).toEqual(['tokyo', 'osaka']);
    const t = planTopology({ regions: 'a,b', brokersPerRegion: '1', gatewayPort: '18080', brokerPort: '19000', wanLatencyMs: '0', dataDir: '/tmp/x' });
    expect(t.regions.map((r) => [r.name, r.gatewayPort, r.brokerPorts])).toEqual([
      ['a', 18080, [19000]],
      ['b', 18081, [19010]],
    ]);
    expect(t.wanLatencyMs).toBe(0);
  });

  it('refuses bad regions, counts and colliding ports with INVALID_CONFIG naming the problem', () => {
    expect(refusal(() => parseRegions('0'))).toMatch(/count must be 1\.\.10/);
    expect(refusal(() => parseRegions('11'))).toMatch(/count must be 1\.\.10/);
    expect(refusal(() => parseRegions('us-east,US-West'))).toMatch(/"US-West" is not a valid site name/);
    expect(refusal(() => parseRegions('a,,b'))).toMatch(/"" is not a valid site name/);
    expect(refusal(() => parseRegions(`a,${'x'.repeat(64)}`))).toMatch(/not a valid site name/);
    expect(refusal(() => parseRegions('a,b,a'))).toMatch(/names "a" twice/);
    expect(refusal(() => planTopology({ brokersPerRegion: '10' }))).toMatch(/brokers-per-region must be an integer in \[1, 9\]/);
    expect(refusal(() => planTopology({ brokersPerRegion: '2.5' }))).toMatch(/brokers-per-region/);
    expect(refusal(() => planTopology({ wanLatencyMs: '-1' }))).toMatch(/wan-latency-ms/);
    expect(refusal(() => planTopology({ gatewayPort: '70000' }))).toMatch(/EDGEQ_PORT/);
    // The gateways of 3 regions would take 8088-8090, the control API's port.
    expect(refusal(() => planTopology({ gatewayPort: '8088' }))).toMatch(/both listen on port 8090/);
    expect(refusal(() => planTopology({ meshPort: '9092' }))).toMatch(/both listen on port 9092/);
    expect(refusal(() => planTopology({ gatewayPort: '65534' }))).toMatch(/outside \[1, 65535\]/);
  });
});
