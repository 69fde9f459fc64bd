/**
 * What the overload bench reports, computed from what it measured: the rows of
 * `bench/results/overload.json` (the issue's shape), the fairness index, the quota windows, the
 * targets (met / not met, never asserted) and the printed table.
 */
import { jainIndex, maxMinFairShares } from '../../ratelimit/index.ts';
import { goodputPerSec, percentileMs, type FlowStats } from './overload-load.ts';

export type ControllerName = 'none' | 'seeds' | 'edgeq';
export const CONTROLLERS: readonly ControllerName[] = ['none', 'seeds', 'edgeq'];

/** One case: a controller at a multiple of the maximum sustainable rate. */
export interface Row {
  controller: ControllerName;
  overload: number;
  goodputPerSec: number;
  p99Ms: number | null;
  p999Ms: number | null;
  throttledShare: number;
  otherErrors: number;
  rssMbMax: number;
  // Beyond the issue's shape:
  offeredPerSec: number;
  p50Ms: number | null;
  throttledP99Ms: number | null;
  due: number;
  ok: number;
  throttled: number;
  timeouts: number;
  clientDropped: number;
  answers: Record<string, number>;
  /** Admitted, but answered after the case's length (not in goodput: see goodputPerSec). */
  okAnsweredAfterCase: number;
  rssMbMaxByProcess: Record<string, number>;
}

const r3 = (x: number) => Math.round(x * 1000) / 1000;

/** A row from a case's merged figures and the peak RSS seen during it. */
export function toRow(controller: ControllerName, overload: number, s: FlowStats, rss: { totalMbMax: number; byProcessMbMax: Record<string, number> }): Row {
  return {
    controller,
    overload,
    goodputPerSec: Math.round(goodputPerSec(s)),
    p99Ms: percentileMs(s.latency, 99),
    p999Ms: percentileMs(s.latency, 99.9),
    throttledShare: s.due === 0 ? 0 : r3(s.throttled / s.due),
    // Everything due that was neither admitted nor throttled: other statuses, socket errors,
    // timeouts, and requests the client could not send (out of sockets and queue, or too late).
    otherErrors: s.other + s.dropped,
    rssMbMax: rss.totalMbMax,
    offeredPerSec: Math.round(s.offeredPerSec),
    p50Ms: percentileMs(s.latency, 50),
    throttledP99Ms: percentileMs(s.throttledLatency, 99),
    due: s.due,
    ok: s.ok,
    throttled: s.throttled,
    timeouts: s.timeouts,
    clientDropped: s.dropped,
    answers: s.answers,
    okAnsweredAfterCase: s.ok - s.okAnsweredInRun,
    rssMbMaxByProcess: rss.byProcessMbMax,
  };
}

/** One tenant of the fairness run. */
export interface TenantFigures {
  tenant: string;
  weight: number;
  offeredPerSec: number;
  admittedPerSec: number;
  /** Its max-min fair share (by weight) of what was admitted in all. */
  fairSharePerSec: number;
}

/**
 * Jain's index over each tenant's admitted rate relative to its max-min fair share, with the
 * shares computed (water filling by weight, `maxMinFairShares`) over the total actually admitted
 * and each tenant's offered rate as its demand. Not over admitted/weight: a tenant that offers less
 * than its share should get what it offers, and admitted/weight would score that as unfair (b and
 * c offering 0.8 of a share beside a tenant given the rest scores 0.93, not 1, for a split
 * that is exactly max-min). Relative to the max-min split of the same total, 1 means the
 * controller split what it admitted exactly max-min fairly, whatever that total was; the total
 * itself is judged by the goodput rows. `jainByWeight` (admitted/weight) is reported beside it.
 */
export function fairness(tenants: readonly { tenant: string; weight: number; offeredPerSec: number; admittedPerSec: number }[]): { jain: number; jainByWeight: number; tenants: TenantFigures[] } {
  const total = tenants.reduce((n, t) => n + t.admittedPerSec, 0);
  const shares = maxMinFairShares(total, tenants.map((t) => ({ key: t.tenant, demand: t.offeredPerSec, weight: t.weight })));
  const out = tenants.map((t) => ({ ...t, fairSharePerSec: Math.round(shares.get(t.tenant) ?? 0) }));
  const relative = tenants.map((t) => {
    const share = shares.get(t.tenant) ?? 0;
    return share > 0 ? t.admittedPerSec / share : 0;
  });
  return { jain: r3(jainIndex(relative)), jainByWeight: r3(jainIndex(tenants.map((t) => t.admittedPerSec / t.weight))), tenants: out };
}

/** The quota accuracy figures: how many windows admitted within ±5% of the quota. */
export function quotaWindows(okByWindow: readonly number[], targetPerSec: number, windowSec: number): { targetPerSec: number; windowsWithin5pct: number; windows: number; windowSec: number; admittedPerSecByWindow: number[]; errorPctByWindow: number[] } {
  const rates = okByWindow.map((n) => n / windowSec);
  const errors = rates.map((r) => Math.round(((r - targetPerSec) / targetPerSec) * 1000) / 10);
  return {
    targetPerSec,
    windowsWithin5pct: errors.filter((e) => Math.abs(e) <= 5).length,
    windows: okByWindow.length,
    windowSec,
    admittedPerSecByWindow: rates.map((r) => Math.round(r * 10) / 10),
    errorPctByWindow: errors,
  };
}

/** One target and whether this run met it. */
export interface TargetCheck {
  target: string;
  measured: string;
  met: boolean | null;
}

/** The issue's targets, against this run (null: not measured in this run). */
export interface TargetInput {
  maxSustainablePerSec: number;
  unloadedP99Ms: number;
  rows: readonly Row[];
  jain: number | null;
  quota: { windowsWithin5pct: number; windows: number } | null;
  /** RSS "bounded": at 3x and 5x no more than this multiple of the same controller's 1x peak. */
  rssGrowthMax: number;
}

export function checkTargets(t: TargetInput): TargetCheck[] {
  const row = (c: ControllerName, x: number) => t.rows.find((r) => r.controller === c && r.overload === x);
  const out: TargetCheck[] = [];
  const e3 = row('edgeq', 3);
  const fmt = (v: number | null) => (v === null ? 'n/a' : String(v));
  out.push(
    e3
      ? { target: 'edgeq 3x: goodput >= 90% of max sustainable', measured: `${e3.goodputPerSec}/s = ${Math.round((e3.goodputPerSec / t.maxSustainablePerSec) * 100)}% of ${t.maxSustainablePerSec}/s`, met: e3.goodputPerSec >= 0.9 * t.maxSustainablePerSec }
      : { target: 'edgeq 3x: goodput >= 90% of max sustainable', measured: 'not run', met: null },
    e3
      ? { target: 'edgeq 3x: admitted p99 <= 2x unloaded p99', measured: `${fmt(e3.p99Ms)} ms vs 2 x ${t.unloadedP99Ms} ms`, met: e3.p99Ms !== null && e3.p99Ms <= 2 * t.unloadedP99Ms }
      : { target: 'edgeq 3x: admitted p99 <= 2x unloaded p99', measured: 'not run', met: null },
    e3 ? { target: 'edgeq 3x: no error other than 429/503', measured: `${e3.otherErrors}`, met: e3.otherErrors === 0 } : { target: 'edgeq 3x: no error other than 429/503', measured: 'not run', met: null },
  );
  const e1 = row('edgeq', 1);
  const peaks = [row('edgeq', 3), row('edgeq', 5)].filter((r): r is Row => r !== undefined);
  out.push(
    e1 && peaks.length > 0
      ? { target: `edgeq: RSS bounded (3x, 5x peak <= ${t.rssGrowthMax}x the 1x peak)`, measured: `${peaks.map((p) => `${p.overload}x ${p.rssMbMax} MB`).join(', ')} vs 1x ${e1.rssMbMax} MB`, met: peaks.every((p) => p.rssMbMax <= t.rssGrowthMax * e1.rssMbMax) }
      : { target: 'edgeq: RSS bounded', measured: 'not run', met: null },
  );
  for (const x of [3, 5]) {
    const e = row('edgeq', x);
    const s = row('seeds', x);
    out.push(
      e && s
        ? { target: `edgeq beats seeds at ${x}x on goodput and p99`, measured: `goodput ${e.goodputPerSec} vs ${s.goodputPerSec}/s, p99 ${fmt(e.p99Ms)} vs ${fmt(s.p99Ms)} ms`, met: e.goodputPerSec > s.goodputPerSec && e.p99Ms !== null && (s.p99Ms === null || e.p99Ms < s.p99Ms) }
        : { target: `edgeq beats seeds at ${x}x on goodput and p99`, measured: 'not run', met: null },
    );
  }
  out.push(t.jain !== null ? { target: 'fairness: Jain index >= 0.95', measured: String(t.jain), met: t.jain >= 0.95 } : { target: 'fairness: Jain index >= 0.95', measured: 'not run', met: null });
  out.push(
    t.quota !== null
      ? { target: 'quota: within ±5% in every 10 s window', measured: `${t.quota.windowsWithin5pct} of ${t.quota.windows} windows`, met: t.quota.windows > 0 && t.quota.windowsWithin5pct === t.quota.windows }
      : { target: 'quota: within ±5% in every 10 s window', measured: 'not run', met: null },
  );
  return out;
}

/** The rows as a markdown table. */
export function rowsTable(rows: readonly Row[]): string {
  const head = '| controller | overload | offered/s | goodput/s | p50 ms | p99 ms | p99.9 ms | throttled | other errors | RSS MB max |';
  const sep = '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|';
  const v = (x: number | null) => (x === null ? '-' : String(x));
  const lines = rows.map(
    (r) => `| ${r.controller} | ${r.overload}x | ${r.offeredPerSec.toLocaleString('en-US')} | ${r.goodputPerSec.toLocaleString('en-US')} | ${v(r.p50Ms)} | ${v(r.p99Ms)} | ${v(r.p999Ms)} | ${(r.throttledShare * 100).toFixed(1)}% | ${r.otherErrors} | ${r.rssMbMax} |`,
  );
  return [head, sep, ...lines].join('\n');
}

/** The targets as lines. */
export function targetsText(checks: readonly TargetCheck[]): string {
  return checks.map((c) => `  ${c.met === null ? 'not run ' : c.met ? 'met     ' : 'NOT MET '} ${c.target}: ${c.measured}`).join('\n');
}
