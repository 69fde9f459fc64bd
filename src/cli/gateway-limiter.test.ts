// Proves the limiter settings of `edgeq gateway`: defaults, flags over the environment (EDGEQ_LIMITER*, EDGEQ_TENANT_WEIGHTS, which `edgeq dev` hands its gateways), and that every bad value stops the start with INVALID_CONFIG naming the flag (exit code 2, before anything is opened).
import { describe, expect, it } from 'vitest';
import { EdgeqError } from '../core/index.ts';
import { LIMITER_INITIAL_PER_SEC_DEFAULT, LIMITER_INTERVAL_MS_DEFAULT, SIGNAL_TARGETS_DEFAULT } from '../../ratelimit/index.ts';
import { limiterSettings } from './limiter-flags.ts';
import { gatewayRefusal } from './test-support.ts';

describe('limiterSettings', () => {
  it('defaults to the edgeq controller, the default interval, capacity and target', () => {
    expect(limiterSettings({}, {})).toEqual({
      controller: 'edgeq',
      intervalMs: LIMITER_INTERVAL_MS_DEFAULT,
      initialPerSec: LIMITER_INITIAL_PER_SEC_DEFAULT,
      targetP99Ms: SIGNAL_TARGETS_DEFAULT.produceP99Ms,
      weights: new Map(),
    });
  });

  it('reads the environment, and a flag wins over its variable', () => {
    const env = { EDGEQ_LIMITER: 'seeds', EDGEQ_LIMITER_INTERVAL_MS: '500', EDGEQ_LIMITER_INITIAL_PER_SEC: '3000', EDGEQ_LIMITER_TARGET_P99_MS: '12', EDGEQ_TENANT_WEIGHTS: 'a=2,b=1' };
    expect(limiterSettings({}, env)).toEqual({ controller: 'seeds', intervalMs: 500, initialPerSec: 3000, targetP99Ms: 12, weights: new Map([['a', 2], ['b', 1]]) });
    expect(limiterSettings({ limiter: 'none', limiterTargetP99Ms: '30', tenantWeights: 'c=3' }, env)).toMatchObject({ controller: 'none', targetP99Ms: 30, weights: new Map([['c', 3]]) });
  });

  it('names the variable and its flag when a bad value came from the environment', () => {
    let err: unknown;
    try {
      limiterSettings({}, { EDGEQ_LIMITER_INTERVAL_MS: '10' });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(EdgeqError);
    expect((err as EdgeqError).message).toMatch(/^EDGEQ_LIMITER_INTERVAL_MS \(--limiter-interval-ms\) must be an integer in \[50, 60000\]/);
  });
});

describe('edgeq gateway refuses bad limiter flags', () => {
  for (const [flag, value] of [
    ['--limiter', 'aimd'],
    ['--limiter-interval-ms', '0'],
    ['--limiter-interval-ms', 'soon'],
    ['--limiter-initial-per-sec', '-5'],
    ['--limiter-initial-per-sec', '1.5'],
    ['--limiter-target-p99-ms', '0'],
    ['--tenant-weights', 'a=0'],
    ['--tenant-weights', 'a'],
  ] as const) {
    it(`${flag} ${value}: INVALID_CONFIG naming ${flag}`, async () => {
      const stderr = await gatewayRefusal([flag, value]);
      expect(stderr).toContain('INVALID_CONFIG');
      expect(stderr).toContain(flag);
    });
  }
});
