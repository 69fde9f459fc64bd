// Proves link changes, region names, route targets and emulator limits are validated field by field, with INVALID_ARGUMENT (or INVALID_CONFIG for limits) naming the bad field, and that good values pass through unchanged.
import { describe, expect, it } from 'vitest';
import { EdgeqError } from '../core/index.ts';
import { resolveWanLimits, WAN_LIMITS } from './limits.ts';
import { checkLinkPatch, checkRegion } from './settings.ts';
import { checkListenPort, parseHostPort } from './target.ts';

function fieldOf(fn: () => unknown): { code: string; field: unknown } {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(EdgeqError);
    const e = err as EdgeqError;
    return { code: e.code, field: e.details['field'] ?? e.details['key'] };
  }
  throw new Error('expected a throw');
}

describe('checkLinkPatch', () => {
  it('passes any subset of good values, and reset', () => {
    expect(checkLinkPatch({}, 60_000)).toEqual({ settings: {}, reset: false });
    expect(checkLinkPatch({ latencyMs: 12.5, jitterMs: 0, lossRate: 1, bandwidthBytesPerSec: 0, blackhole: true, reset: true }, 60_000)).toEqual({
      settings: { latencyMs: 12.5, jitterMs: 0, lossRate: 1, bandwidthBytesPerSec: 0, blackhole: true },
      reset: true,
    });
  });

  const bad: [string, unknown][] = [
    ['latencyMs', -1],
    ['latencyMs', Number.NaN],
    ['latencyMs', Number.POSITIVE_INFINITY],
    ['latencyMs', '25'],
    ['latencyMs', null],
    ['latencyMs', 60_001],
    ['jitterMs', -0.5],
    ['jitterMs', true],
    ['lossRate', -0.01],
    ['lossRate', 1.01],
    ['lossRate', Number.NaN],
    ['lossRate', '0.1'],
    ['bandwidthBytesPerSec', 1.5],
    ['bandwidthBytesPerSec', -1],
    ['bandwidthBytesPerSec', 2 ** 60],
    ['bandwidthBytesPerSec', '1000'],
    ['blackhole', 'true'],
    ['blackhole', 1],
    ['reset', 'yes'],
  ];
  it.each(bad)('refuses %s = %s naming the field', (field, value) => {
    expect(fieldOf(() => checkLinkPatch({ [field]: value }, 60_000))).toEqual({ code: 'INVALID_ARGUMENT', field });
  });

  it('refuses unknown fields and non-objects', () => {
    expect(fieldOf(() => checkLinkPatch({ latencyMs: 5, latency: 5 }, 60_000))).toEqual({ code: 'INVALID_ARGUMENT', field: 'latency' });
    for (const v of [null, [], 'x', 3]) expect(fieldOf(() => checkLinkPatch(v, 60_000)).code).toBe('INVALID_ARGUMENT');
  });
});

describe('regions, targets and ports', () => {
  it('accepts site names and refuses others', () => {
    expect(checkRegion('us-east', 'from')).toBe('us-east');
    expect(checkRegion('a'.repeat(63), 'from')).toHaveLength(63);
    for (const r of ['', 'US-east', 'us_east', 'a'.repeat(64), 'eu/west', 7]) expect(fieldOf(() => checkRegion(r, 'to'))).toEqual({ code: 'INVALID_ARGUMENT', field: 'to' });
  });

  it('parses host:port targets', () => {
    expect(parseHostPort('127.0.0.1:9092', 'target')).toEqual({ host: '127.0.0.1', port: 9092 });
    expect(parseHostPort('[::1]:80', 'target')).toEqual({ host: '::1', port: 80 });
    for (const t of ['127.0.0.1', ':80', '127.0.0.1:0', '127.0.0.1:65536', 'h:8x', 'h:', 42]) expect(fieldOf(() => parseHostPort(t, 'target'))).toEqual({ code: 'INVALID_ARGUMENT', field: 'target' });
  });

  it('checks listening ports', () => {
    expect(checkListenPort(0)).toBe(0);
    for (const p of [-1, 65536, 1.5, '80']) expect(fieldOf(() => checkListenPort(p)).code).toBe('INVALID_ARGUMENT');
  });
});

describe('resolveWanLimits', () => {
  it('fills defaults and refuses bounds that do not fit together', () => {
    expect(resolveWanLimits()).toEqual(WAN_LIMITS);
    expect(fieldOf(() => resolveWanLimits({ linksMax: 0 }))).toEqual({ code: 'INVALID_CONFIG', field: 'linksMax' });
    expect(fieldOf(() => resolveWanLimits({ tcpResumeBytes: WAN_LIMITS.tcpQueuedBytesPerDirectionMax }))).toEqual({ code: 'INVALID_CONFIG', field: 'tcpResumeBytes' });
    expect(fieldOf(() => resolveWanLimits({ tcpSegmentBytesMax: 2 * WAN_LIMITS.tcpQueuedBytesPerDirectionMax }))).toEqual({ code: 'INVALID_CONFIG', field: 'tcpSegmentBytesMax' });
    expect(fieldOf(() => resolveWanLimits({ udpQueuedBytesPerRouteMax: 1000 }))).toEqual({ code: 'INVALID_CONFIG', field: 'udpQueuedBytesPerRouteMax' });
    expect(fieldOf(() => resolveWanLimits({ bogus: 1 } as never))).toEqual({ code: 'INVALID_CONFIG', field: 'bogus' });
  });
});
