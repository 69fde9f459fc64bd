/**
 * One campaign round: its schedule from the round seed, a checked run through the drill runner
 * (fresh topics, the workload, the faults at their moments, heal, converge, check), and the
 * round's verdict under the flush policy's guarantee. Plus the campaign's summary
 * (`bench/results/chaos.json`) over the rounds.
 */
import type { FaultDriver, Deployment } from '../faults/index.ts';
import { runChecked, type CheckedRunResult, type DrillProgress } from '../runner/index.ts';
import { cellsThatLostPower, roundVerdict, type FlushPolicy, type RoundVerdict } from './guarantee.ts';
import { ROUND_DURATION_MS, roundSchedule, type PlannedFault } from './schedule.ts';

/** Workload records/s per region to each checked topic in a round (3 regions × 2 topics × 20/s: light enough for 2 cores beside 12 processes). */
export const ROUND_RATE = 20;
/** Bound on convergence after a round's last heal (the exchange polls every 0.5 s; a region whose cell lost power replays and re-elects first). */
export const ROUND_CONVERGE_MS = 60_000;

export interface RoundOptions {
  readonly driver: FaultDriver;
  readonly deployment: Deployment;
  readonly roundSeed: number;
  readonly policy: FlushPolicy;
  readonly durationMs?: number;
  readonly rate?: number;
  readonly signal?: AbortSignal;
  readonly onProgress?: (p: DrillProgress) => void;
}

export interface RoundResult {
  readonly roundSeed: number;
  readonly plan: readonly PlannedFault[];
  /** The faults in words, e.g. `power-loss-cell@eu-west 3.2s+2.1s`. */
  readonly faults: string;
  readonly run: CheckedRunResult;
  readonly verdict: RoundVerdict;
  readonly cellsLostPower: readonly string[];
  readonly corruptions: number;
  readonly elapsedMs: number;
}

/** A plan in one line. */
export function describePlan(plan: readonly PlannedFault[]): string {
  return plan.map((p) => `${p.name}@${p.region} ${(p.atMs / 1000).toFixed(1)}s+${(p.holdMs / 1000).toFixed(1)}s`).join(', ');
}

/** The runner's own problems among a report's reasons (the checker's are counts: "3 acknowledged records lost"). */
function runProblems(reasons: readonly string[]): string[] {
  return reasons.filter((r) => !/^\d+ /.test(r) && r !== 'the checker failed the run');
}

/** Runs one round (see the file comment). */
export async function runRound(o: RoundOptions): Promise<RoundResult> {
  const started = Date.now();
  const durationMs = o.durationMs ?? ROUND_DURATION_MS;
  const { faults, plan, ledger } = roundSchedule(o.roundSeed, o.deployment, { durationMs });
  const run = await runChecked({
    driver: o.driver,
    deployment: o.deployment,
    scenario: 'chaos',
    region: null,
    seed: o.roundSeed,
    rate: o.rate ?? ROUND_RATE,
    durationMs,
    faults,
    convergeTimeoutMs: ROUND_CONVERGE_MS,
    ...(o.signal ? { signal: o.signal } : {}),
    ...(o.onProgress ? { onProgress: o.onProgress } : {}),
  });
  const cells = Object.fromEntries(o.deployment.regions.map((r) => [r.region, r.brokers.map((b) => b.name)]));
  const cellsLostPower = cellsThatLostPower(ledger.powerLosses, cells);
  const verdict = roundVerdict(run.check, { policy: o.policy, cellsLostPower, problems: runProblems(run.report.reasons) });
  return { roundSeed: o.roundSeed, plan, faults: describePlan(plan), run, verdict, cellsLostPower, corruptions: ledger.corruptions.length, elapsedMs: Date.now() - started };
}

/** `bench/results/chaos.json`. */
export interface CampaignSummary {
  readonly rounds: number;
  readonly seed: number;
  readonly flushPolicy: FlushPolicy;
  readonly lost: number;
  readonly lostExcused: number;
  readonly divergentOffsets: number;
  readonly reordered: number;
  readonly duplicates: number;
  readonly duplicatesOfIndeterminate: number;
  readonly acked: number;
  /** With the checker's examples per finding (up to CHECK_EXAMPLES_MAX each), to start the diagnosis from. */
  readonly failedRounds: { readonly roundSeed: number; readonly faults: string; readonly finding: string; readonly examples: Readonly<Record<string, readonly string[]>> }[];
  /** Rounds each fault kind appeared in. */
  readonly faultCounts: Record<string, number>;
  readonly roundSeconds: { readonly min: number; readonly median: number; readonly max: number };
  readonly minutes: number;
}

/** The campaign's summary over its rounds. */
export function summarize(seed: number, policy: FlushPolicy, rounds: readonly RoundResult[], elapsedMs: number): CampaignSummary {
  const sum = (f: (r: RoundResult) => number) => rounds.reduce((n, r) => n + f(r), 0);
  const faultCounts: Record<string, number> = {};
  for (const r of rounds) for (const p of r.plan) faultCounts[p.name] = (faultCounts[p.name] ?? 0) + 1;
  const secs = rounds.map((r) => r.elapsedMs / 1000).sort((a, b) => a - b);
  const round1 = (x: number) => Math.round(x * 10) / 10;
  return {
    rounds: rounds.length,
    seed,
    flushPolicy: policy,
    lost: sum((r) => r.verdict.lost),
    lostExcused: sum((r) => r.verdict.lostExcused),
    divergentOffsets: sum((r) => r.run.check.divergentOffsets),
    reordered: sum((r) => r.run.check.reordered),
    duplicates: sum((r) => r.run.check.duplicates),
    duplicatesOfIndeterminate: sum((r) => r.run.check.duplicatesOfIndeterminate),
    acked: sum((r) => r.run.check.acked),
    failedRounds: rounds.filter((r) => r.verdict.verdict === 'fail').map((r) => ({ roundSeed: r.roundSeed, faults: r.faults, finding: r.verdict.findings.join('; '), examples: r.run.check.examples })),
    faultCounts,
    roundSeconds: secs.length === 0 ? { min: 0, median: 0, max: 0 } : { min: round1(secs[0]!), median: round1(secs[Math.floor(secs.length / 2)]!), max: round1(secs[secs.length - 1]!) },
    minutes: round1(elapsedMs / 60_000),
  };
}
