// Proves the drill report's schema (exactly the fields, plus `reasons`), its ISO times and
// sorted timeline, and the verdict rule: pass only with a passing check and no drill problem; each
// finding and each problem is a reason, and the exit code follows the verdict.
import { describe, expect, it } from 'vitest';
import type { CheckResult } from '../types.ts';
import { buildReport, exitCodeOf, type DrillOutcome } from './report.ts';

const clean: CheckResult = {
  acked: 1200,
  lost: 0,
  unexpected: 0,
  duplicates: 0,
  duplicatesOfIndeterminate: 2,
  reordered: 0,
  indeterminate: { total: 3, found: 2 },
  failedFound: 0,
  offsetsBackwards: 0,
  emptyBelowHighWatermark: 0,
  divergentOffsets: 0,
  examples: {},
  verdict: 'pass',
};

const outcome = (o: Partial<DrillOutcome> = {}): DrillOutcome => ({
  scenario: 'leader-kill',
  region: 'eu-west',
  seed: 7,
  startedAtMs: Date.UTC(2026, 11, 1, 20, 0, 0),
  faultAtMs: Date.UTC(2026, 11, 1, 20, 0, 10),
  healAtMs: Date.UTC(2026, 11, 1, 20, 0, 40),
  detectMs: 1800,
  recoverMs: 2100,
  convergeMs: 900,
  unavailableMs: { 'eu-west': 2100, 'us-east': 0 },
  check: clean,
  timeline: [
    { t: Date.UTC(2026, 11, 1, 20, 0, 12), event: 'cell.leader', detail: 'drill-g/0: leader 1 → 2 (epoch 3 → 4)', region: 'eu-west' },
    { t: Date.UTC(2026, 11, 1, 20, 0, 10), event: 'fault', detail: 'SIGKILL eu-west/broker-1', region: '' },
  ],
  problems: [],
  ...o,
});

describe('drill report', () => {
  it('has exactly the issue\'s fields (and reasons), ISO times, a sorted timeline, and passes a clean run', () => {
    const r = buildReport(outcome());
    expect(Object.keys(r).sort()).toEqual(
      ['scenario', 'region', 'seed', 'startedAt', 'faultAt', 'healAt', 'detectMs', 'recoverMs', 'convergeMs', 'unavailableMs', 'acked', 'lost', 'duplicates', 'reordered', 'indeterminate', 'divergentOffsets', 'timeline', 'verdict', 'reasons'].sort(),
    );
    expect(r).toMatchObject({ scenario: 'leader-kill', faultAt: '2026-12-01T20:00:10.000Z', acked: 1200, indeterminate: { total: 3, found: 2 }, verdict: 'pass', reasons: [] });
    expect(r.timeline.map((e) => e.event)).toEqual(['fault', 'cell.leader']);
    expect(r.timeline[1]!.detail).toBe('eu-west: drill-g/0: leader 1 → 2 (epoch 3 → 4)');
    expect(exitCodeOf(r)).toBe(0);
    expect(JSON.parse(JSON.stringify(r))).toEqual(r);
  });

  it('fails on each finding of the checker, and on a problem of the drill itself, saying why', () => {
    const lost = buildReport(outcome({ check: { ...clean, lost: 2, verdict: 'fail' } }));
    expect(lost).toMatchObject({ verdict: 'fail', lost: 2, reasons: ['2 acknowledged records lost'] });
    expect(exitCodeOf(lost)).toBe(1);
    const diverged = buildReport(outcome({ check: { ...clean, divergentOffsets: 5, emptyBelowHighWatermark: 1, verdict: 'fail' } }));
    expect(diverged.reasons).toEqual(['1 empty reads below the high watermark', '5 offsets that differ between replicas']);
    const unhealed = buildReport(outcome({ problems: ['could not heal the link eu-west→us-east'] }));
    expect(unhealed).toMatchObject({ verdict: 'fail', reasons: ['could not heal the link eu-west→us-east'] });
    // A failing check with no counted finding still fails.
    expect(buildReport(outcome({ check: { ...clean, verdict: 'fail' } })).reasons).toEqual(['the checker failed the run']);
    // Allowed duplicates (of indeterminate requests) do not fail a drill.
    expect(buildReport(outcome({ check: { ...clean, duplicatesOfIndeterminate: 40 } })).verdict).toBe('pass');
  });

  it('a drill that never injected: null times', () => {
    const r = buildReport(outcome({ faultAtMs: null, healAtMs: null, detectMs: null, recoverMs: null, convergeMs: null }));
    expect(r).toMatchObject({ faultAt: null, healAt: null, detectMs: null, recoverMs: null, convergeMs: null });
  });
});
