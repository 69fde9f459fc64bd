// Proves --tenant-weights parsing: `a=2,b=1` gives those weights, and every malformed list is INVALID_CONFIG naming the flag.
import { describe, expect, it } from 'vitest';
import { EdgeqError } from '../src/core/index.ts';
import { parseTenantWeights, TENANT_WEIGHT_MAX } from './tenant-weights.ts';

describe('parseTenantWeights', () => {
  it('reads tenant=weight pairs, whitespace and empty entries ignored', () => {
    expect([...parseTenantWeights(' a=2, b=1 ,c=0.5,', '--tenant-weights')]).toEqual([
      ['a', 2],
      ['b', 1],
      ['c', 0.5],
    ]);
    expect(parseTenantWeights('').size).toBe(0);
  });

  it('refuses a malformed list, naming the flag', () => {
    for (const raw of ['a', 'a=', '=2', 'a=0', 'a=-1', 'a=x', 'a=1e3', `a=${TENANT_WEIGHT_MAX + 1}`, 'a=1,a=2', '*=1', 'a b=1', `${'t'.repeat(65)}=1`, 'a=NaN', 'a=Infinity']) {
      let err: unknown;
      try {
        parseTenantWeights(raw, '--tenant-weights');
      } catch (e) {
        err = e;
      }
      expect(err, raw).toBeInstanceOf(EdgeqError);
      expect((err as EdgeqError).code).toBe('INVALID_CONFIG');
      expect((err as EdgeqError).message).toMatch(/^--tenant-weights: /);
      expect((err as EdgeqError).details['key']).toBe('--tenant-weights');
    }
  });
});
