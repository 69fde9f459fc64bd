/**
 * The shapes the drill runner shares with the scenarios, the fault campaign and the report store
 * (issue 16). A fault is data plus an `inject` that returns how to undo it, so the same runner
 * executes a named drill (one fault) and a campaign round (1-3 faults at seeded moments), and
 * every fault is healed on every way out (pass, fail, Ctrl-C).
 */
import type { CheckedTopic, CheckResult } from '../types.ts';
import type { Deployment, FaultDriver } from '../faults/index.ts';
import type { DrillReport } from '../report/index.ts';
import type { CheckedWorkload, CheckedWorkloadOptions } from '../workload/index.ts';

/** The drills `edgeq drill <scenario>` runs, in the words. */
export const SCENARIOS = ['broker-kill', 'leader-kill', 'region-isolate', 'region-kill', 'arbiter-loss', 'link-degrade', 'gateway-kill'] as const;
export type ScenarioName = (typeof SCENARIOS)[number];

/** One partition of a cell as a region's gateway reports it (`GET /v1/cell`). */
export interface CellPartitionView {
  readonly topic: string;
  readonly partition: number;
  readonly leader: number | null;
  readonly epoch: number;
  readonly isr: readonly number[];
  readonly replicas: readonly number[];
  readonly highWatermark: number;
}

/** A region's cell, as its gateway reports it. */
export interface CellView {
  readonly brokers: readonly { readonly id: number; readonly alive: boolean }[];
  readonly partitions: readonly CellPartitionView[];
}

/** What a fault is given when it is injected. */
export interface FaultContext {
  readonly driver: FaultDriver;
  readonly deployment: Deployment;
  /** The region the fault targets. */
  readonly region: string;
  /** Seeded: the same seed picks the same victims. */
  readonly random: () => number;
  /** Marks an event in the drill's timeline (e.g. `fault.kill`, "us-east/broker-2"). */
  readonly mark: (event: string, detail: string, region?: string) => void;
  /** The region's cell now (through its gateway). */
  readonly cell: (region: string) => Promise<CellView>;
  /** The checked topics (leader-kill picks the busiest partition among them). */
  readonly topics: readonly CheckedTopic[];
  readonly signal: AbortSignal;
}

/** A fault in place. */
export interface InjectedFault {
  readonly name: string;
  readonly region: string | null;
  /** What detecting it means: the cell electing a new leader, or the mesh marking a region's member suspect/dead; null when nothing is to detect (a degraded link). */
  readonly detect: { readonly leader: true } | { readonly memberOf: string } | null;
  /** Regions whose writes the fault may interrupt: recoverMs and unavailableMs are measured there. */
  readonly affected: readonly string[];
  /** Undoes it (idempotent); the driver's healAll is the backstop. */
  heal(): Promise<void>;
}

/** A kind of fault. */
export interface FaultSpec {
  readonly name: string;
  inject(ctx: FaultContext): Promise<InjectedFault>;
}

/** A fault at a moment of the run: injected `atMs` after the workload started, healed `holdMs` later. */
export interface ScheduledFault {
  readonly fault: FaultSpec;
  readonly region: string;
  readonly atMs: number;
  readonly holdMs: number;
}

/** Phases of a checked run, in order. */
export type DrillPhase = 'connect' | 'prepare' | 'warmup' | 'fault' | 'heal' | 'recover' | 'converge' | 'check' | 'done';

/** Live progress (the terminal's progress line, the report store's progress file). */
export interface DrillProgress {
  readonly phase: DrillPhase;
  readonly elapsedMs: number;
  readonly acked: number;
  readonly detail?: string;
}

/** What a checked run (a drill, a campaign round) is given. */
export interface CheckedRunOptions {
  readonly driver: FaultDriver;
  readonly deployment: Deployment;
  /** The report's `scenario` (a drill's name, or `chaos` for a campaign round). */
  readonly scenario: string;
  readonly region: string | null;
  readonly seed: number;
  /** Workload records/s per region (to each of the global and the local topic). */
  readonly rate: number;
  /** How long the workload runs in all (faults are scheduled inside it). */
  readonly durationMs: number;
  readonly faults: readonly ScheduledFault[];
  /** Bound on convergence after the last heal; default in the runner. */
  readonly convergeTimeoutMs?: number;
  readonly apiKey?: string | null;
  readonly onProgress?: (p: DrillProgress) => void;
  /** Aborting heals everything, stops the workload and returns a failing report ("interrupted"). */
  readonly signal?: AbortSignal;
  /** Builds the workload (default: a CheckedWorkload); tests plant a lying workload through it. */
  readonly makeWorkload?: (o: CheckedWorkloadOptions) => CheckedWorkload;
  /**
   * Whether the run deletes its two topics at the end: `on-pass` (default: a failing run's topics
   * stay, to be read again for a diagnosis), `always`, or `never` (`edgeq drill --keep-topics`).
   */
  readonly deleteTopics?: 'on-pass' | 'always' | 'never';
}

/** What a checked run returns: the report, and the checker's full result (examples included). */
export interface CheckedRunResult {
  readonly report: DrillReport;
  readonly check: CheckResult;
}
