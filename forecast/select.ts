/** Automatic model selection: the lowest MASE wins (PROTOCOL.md §6's ranking metric), figures recorded. */
import { EdgeqError } from '../src/core/index.ts';
import type { BacktestResult } from './backtest.ts';

/** One candidate as the selection records it. */
export interface Candidate {
  readonly method: string;
  readonly mase: number;
  readonly smape: number;
  readonly peakCapture: number;
  readonly peakUnder: number;
}

/** The winner and every candidate, best first. */
export interface Selection {
  readonly method: string;
  readonly mase: number;
  readonly reason: string;
  readonly ranking: Candidate[];
}

/**
 * Picks the result with the lowest MASE; ties go to the lower sMAPE, then the name, so the choice
 * never depends on the order of `results`. Results with a non-finite MASE cannot win.
 */
export function selectBest(results: readonly BacktestResult[]): Selection {
  const ranking = results
    .filter((r) => Number.isFinite(r.mase))
    .map((r) => ({ method: r.method, mase: r.mase, smape: r.smape, peakCapture: r.peakCapture, peakUnder: r.peakUnder }))
    .sort((a, b) => a.mase - b.mase || a.smape - b.smape || (a.method < b.method ? -1 : a.method > b.method ? 1 : 0));
  const best = ranking[0];
  if (best === undefined) throw new EdgeqError('INVALID_ARGUMENT', `no result with a finite MASE to select from (${results.length} given)`, { details: { results: results.length } });
  const runnerUp = ranking[1];
  const reason = runnerUp === undefined ? `only candidate (MASE ${best.mase.toFixed(4)})` : `lowest MASE ${best.mase.toFixed(4)} (next: ${runnerUp.method} ${runnerUp.mase.toFixed(4)})`;
  return { method: best.method, mase: best.mase, reason, ranking };
}
