// Proves the gateway's ingress-history flags: defaults, the environment, and INVALID_CONFIG naming the key for each value out of range or not a number.
import { describe, expect, it } from 'vitest';
import { ingressHistorySettings } from './settings.ts';

describe('ingressHistorySettings', () => {
  it('defaults to a 60 s step and 28 days, and reads the environment', () => {
    expect(ingressHistorySettings({}, {})).toEqual({ stepMs: 60_000, retentionMs: 2_419_200_000 });
    expect(ingressHistorySettings({}, { EDGEQ_INGRESS_STEP_MS: '1000', EDGEQ_INGRESS_RETENTION_MS: '10000' })).toEqual({ stepMs: 1_000, retentionMs: 10_000 });
    expect(ingressHistorySettings({ ingressStepMs: '100' }, { EDGEQ_INGRESS_STEP_MS: '1000' }).stepMs).toBe(100);
  });

  it('refuses each flag out of range or not a number', () => {
    const cases: [Record<string, string>, string][] = [
      [{ ingressStepMs: '99' }, 'ingressStepMs'],
      [{ ingressStepMs: '3600001' }, 'ingressStepMs'],
      [{ ingressStepMs: 'abc' }, 'ingressStepMs'],
      [{ ingressStepMs: '-5' }, 'ingressStepMs'],
      [{ ingressStepMs: '1.5' }, 'ingressStepMs'],
      [{ ingressRetentionMs: 'x' }, 'ingressRetentionMs'],
      [{ ingressRetentionMs: '-1' }, 'ingressRetentionMs'],
      // Fewer than 10 steps.
      [{ ingressStepMs: '1000', ingressRetentionMs: '9999' }, 'ingressRetentionMs'],
      [{ ingressRetentionMs: '599999' }, 'ingressRetentionMs'],
    ];
    for (const [flags, key] of cases) {
      expect(() => ingressHistorySettings(flags, {}), JSON.stringify(flags)).toThrow(expect.objectContaining({ code: 'INVALID_CONFIG', details: expect.objectContaining({ key }) }));
    }
  });
});
