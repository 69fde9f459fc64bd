// Proves the flush-policy rule: with sync every loss fails a round; with interval/os only losses in a round where a whole cell was without power at once are excused, and nothing else is.
import { describe, expect, it } from 'vitest';
import type { CheckResult } from '../types.ts';
import type { PowerLossEvent } from './faults.ts';
import { cellsThatLostPower, roundVerdict } from './guarantee.ts';

const clean: CheckResult = { acked: 100, lost: 0, unexpected: 0, duplicates: 0, duplicatesOfIndeterminate: 2, reordered: 0, indeterminate: { total: 2, found: 1 }, failedFound: 0, offsetsBackwards: 0, emptyBelowHighWatermark: 0, divergentOffsets: 0, examples: {}, verdict: 'pass' };
const lossy: CheckResult = { ...clean, lost: 3, verdict: 'fail' };
const cells = { a: ['a/b0', 'a/b1', 'a/b2'], b: ['b/b0', 'b/b1', 'b/b2'] };
const loss = (region: string, brokers: string[], atMs: number, healedAtMs: number | null): PowerLossEvent => ({ region, brokers, wholeCell: brokers.length === 3, atMs, healedAtMs });

describe('cellsThatLostPower', () => {
  it('a whole-cell power loss, or overlapping ones covering the cell; not one broker, nor losses one after another', () => {
    expect(cellsThatLostPower([loss('a', cells.a, 10, 20)], cells)).toEqual(['a']);
    expect(cellsThatLostPower([loss('a', ['a/b0'], 10, 30), loss('a', ['a/b1', 'a/b2'], 20, 40)], cells)).toEqual(['a']);
    expect(cellsThatLostPower([loss('a', ['a/b0'], 10, 30)], cells)).toEqual([]);
    expect(cellsThatLostPower([loss('a', ['a/b0'], 10, 15), loss('a', ['a/b1', 'a/b2'], 20, 40)], cells)).toEqual([]);
    expect(cellsThatLostPower([loss('b', ['b/b0', 'b/b1'], 10, null), loss('b', ['b/b2'], 50, 60)], cells)).toEqual(['b']);
  });
});

describe('roundVerdict', () => {
  it('passes a clean round (duplicates of indeterminate requests are allowed)', () => {
    expect(roundVerdict(clean, { policy: 'sync', cellsLostPower: [] })).toEqual({ verdict: 'pass', lostExcused: 0, lost: 0, findings: [] });
  });
  it('with sync, a loss fails the round even after a whole cell lost power', () => {
    expect(roundVerdict(lossy, { policy: 'sync', cellsLostPower: ['a'] })).toMatchObject({ verdict: 'fail', lost: 3, lostExcused: 0, findings: ['3 acknowledged records lost'] });
  });
  it('with interval or os, losses after a whole cell lost power are excused; without one they fail', () => {
    for (const policy of ['interval', 'os'] as const) {
      expect(roundVerdict(lossy, { policy, cellsLostPower: ['a'] })).toEqual({ verdict: 'pass', lostExcused: 3, lost: 0, findings: [] });
      expect(roundVerdict(lossy, { policy, cellsLostPower: [] })).toMatchObject({ verdict: 'fail', lost: 3 });
    }
  });
  it('nothing but losses is ever excused: divergence, reorders, unexpected, plain duplicates, runner problems fail', () => {
    const bad: CheckResult = { ...lossy, divergentOffsets: 1, reordered: 2, unexpected: 1, duplicates: 1 };
    const v = roundVerdict(bad, { policy: 'os', cellsLostPower: ['a'], problems: ['not converged within 60000 ms'] });
    expect(v.verdict).toBe('fail');
    expect(v.findings).toEqual(['1 unexpected records', '1 duplicates of acknowledged records', '2 records out of order per origin', '1 offsets that differ between replicas', 'not converged within 60000 ms']);
    expect(roundVerdict({ ...clean, verdict: 'fail' }, { policy: 'sync', cellsLostPower: [] }).findings).toEqual(['the check failed']);
  });
});
