// Proves automatic selection picks the lowest MASE whatever the input order, breaks ties by
// sMAPE then name, skips non-finite MASE and refuses an empty choice.
import { describe, expect, it } from 'vitest';
import type { BacktestResult } from './backtest.ts';
import { selectBest } from './select.ts';

const result = (method: string, mase: number, smape = 10): BacktestResult => ({
  method,
  series: 's',
  stride: 1,
  mase,
  smape,
  peakCapture: 0.5,
  peakUnder: 0.2,
  peakOver: 0.3,
  maseByHorizon: [],
  origins: 1,
  trainMs: 0,
  backend: 'js',
  details: {},
});

describe('selectBest', () => {
  it('picks the lowest MASE and ranks every candidate', () => {
    const s = selectBest([result('a', 1.2), result('b', 0.9), result('c', 1.0)]);
    expect(s.method).toBe('b');
    expect(s.mase).toBe(0.9);
    expect(s.ranking.map((c) => c.method)).toEqual(['b', 'c', 'a']);
    expect(s.reason).toContain('next: c');
    expect(selectBest([result('c', 1.0), result('a', 1.2), result('b', 0.9)]).method).toBe('b');
  });

  it('breaks ties by sMAPE then name, and ignores NaN', () => {
    expect(selectBest([result('x', 1, 20), result('y', 1, 10)]).method).toBe('y');
    expect(selectBest([result('y', 1), result('x', 1)]).method).toBe('x');
    expect(selectBest([result('nan', Number.NaN), result('ok', 3)]).method).toBe('ok');
  });

  it('refuses an empty choice', () => {
    expect(() => selectBest([])).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });
});
