/**
 * The drill's JSON report (issue 16), in its stable schema: what was injected and when, the
 * timings, what the checker found, the timeline, and the verdict. Built from the parts the drill
 * collects (pure, so the schema and the verdict rule are tested alone); `edgeq drill --json`
 * prints it, and the report store keeps it.
 */
import type { CheckResult } from '../types.ts';
import type { TimelineEvent } from '../timeline/index.ts';

/** The report, field for field as the issue names it. */
export interface DrillReport {
  readonly scenario: string;
  readonly region: string | null;
  readonly seed: number;
  readonly startedAt: string;
  readonly faultAt: string | null;
  readonly healAt: string | null;
  readonly detectMs: number | null;
  readonly recoverMs: number | null;
  readonly convergeMs: number | null;
  readonly unavailableMs: Readonly<Record<string, number>>;
  readonly acked: number;
  readonly lost: number;
  readonly duplicates: number;
  readonly reordered: number;
  readonly indeterminate: { readonly total: number; readonly found: number };
  readonly divergentOffsets: number;
  readonly timeline: readonly { readonly t: string; readonly event: string; readonly detail: string }[];
  readonly verdict: 'pass' | 'fail';
  /** Why a failing drill failed, one line each (empty on a pass). */
  readonly reasons: readonly string[];
}

/** What the drill hands the report builder. */
export interface DrillOutcome {
  readonly scenario: string;
  readonly region: string | null;
  readonly seed: number;
  readonly startedAtMs: number;
  readonly faultAtMs: number | null;
  readonly healAtMs: number | null;
  readonly detectMs: number | null;
  readonly recoverMs: number | null;
  readonly convergeMs: number | null;
  readonly unavailableMs: Readonly<Record<string, number>>;
  readonly check: CheckResult;
  readonly timeline: readonly TimelineEvent[];
  /** Problems of the drill itself (a fault it could not heal, a region never drained, …). */
  readonly problems: readonly string[];
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/**
 * One line per finding of a check, in one wording for drills and campaign rounds; `lost` is the
 * count to report (a campaign round passes the losses its flush policy does not excuse).
 */
export function checkFindings(c: CheckResult, lost = c.lost): string[] {
  const out: string[] = [];
  const finding = (n: number, what: string) => {
    if (n > 0) out.push(`${n} ${what}`);
  };
  finding(lost, 'acknowledged records lost');
  finding(c.unexpected, 'unexpected records');
  finding(c.failedFound, 'records that failed but were written');
  // The checker counts duplicates of indeterminate or retried requests apart (allowed): these are the others.
  finding(c.duplicates, 'duplicates of acknowledged records');
  finding(c.reordered, 'records out of order per origin');
  finding(c.offsetsBackwards, 'polls whose offsets went backwards');
  finding(c.emptyBelowHighWatermark, 'empty reads below the high watermark');
  finding(c.divergentOffsets, 'offsets that differ between replicas');
  return out;
}

/** The report; the verdict is fail when the checker failed or the drill met a problem. */
export function buildReport(o: DrillOutcome): DrillReport {
  const c = o.check;
  const reasons = checkFindings(c);
  if (c.verdict === 'fail' && reasons.length === 0) reasons.push('the checker failed the run');
  reasons.push(...o.problems);
  return {
    scenario: o.scenario,
    region: o.region,
    seed: o.seed,
    startedAt: iso(o.startedAtMs)!,
    faultAt: iso(o.faultAtMs),
    healAt: iso(o.healAtMs),
    detectMs: o.detectMs,
    recoverMs: o.recoverMs,
    convergeMs: o.convergeMs,
    unavailableMs: { ...o.unavailableMs },
    acked: c.acked,
    lost: c.lost,
    duplicates: c.duplicates,
    reordered: c.reordered,
    indeterminate: { total: c.indeterminate.total, found: c.indeterminate.found },
    divergentOffsets: c.divergentOffsets,
    timeline: [...o.timeline].sort((a, b) => a.t - b.t).map((e) => ({ t: new Date(e.t).toISOString(), event: e.event, detail: e.region ? `${e.region}: ${e.detail}` : e.detail })),
    verdict: reasons.length === 0 ? 'pass' : 'fail',
    reasons,
  };
}

/** The exit code of `edgeq drill`: 0 pass, 1 fail (2, bad input, is the CLI's before anything runs). */
export function exitCodeOf(report: DrillReport): 0 | 1 {
  return report.verdict === 'pass' ? 0 : 1;
}
