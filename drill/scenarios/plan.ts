/**
 * A drill's request checked against the deployment, and its schedule (issue 16). Everything is
 * checked before anything is injected: a bad scenario, region, duration, rate or seed is
 * INVALID_ARGUMENT naming the field (the CLI exits 2; POST /v1/drills answers 400).
 */
import { EdgeqError } from '../../src/core/index.ts';
import type { Deployment } from '../faults/index.ts';
import { SCENARIOS, type ScenarioName, type ScheduledFault } from '../runner/types.ts';
import { WORKLOAD_RATE_MAX } from '../workload/index.ts';
import { SCENARIO_FAULTS } from './specs.ts';

/** Shortest drill: a warmup, the fault and a tail each need at least a second. */
export const DRILL_DURATION_S_MIN = 3;
/** Longest drill. */
export const DRILL_DURATION_S_MAX = 3_600;
export const DRILL_DURATION_S_DEFAULT = 20;
export const DRILL_RATE_DEFAULT = 20;
/** The fault comes after this share of the duration (the warmup shows the steady state) … */
export const FAULT_AT_SHARE = 0.3;
/** … and is held for this share, leaving the rest to see the recovery. */
export const FAULT_HOLD_SHARE = 0.4;
/** Seeds are 32-bit unsigned (the seeded generator's state). */
export const SEED_MAX = 0xffff_ffff;

/** Scenarios that act between regions: they need a second one. */
const NEEDS_TWO_REGIONS: ReadonlySet<ScenarioName> = new Set(['region-isolate', 'region-kill', 'link-degrade']);
/** Scenarios that fail a cell's broker over: they need a second broker. */
const NEEDS_TWO_BROKERS: ReadonlySet<ScenarioName> = new Set(['broker-kill', 'leader-kill', 'arbiter-loss']);

/** What a drill is asked to do (the CLI's flags, POST /v1/drills' body). */
export interface DrillRequest {
  readonly scenario: string;
  readonly region?: string | undefined;
  readonly durationS?: number | undefined;
  readonly rate?: number | undefined;
  readonly seed?: number | undefined;
}

/** A drill ready to run. */
export interface DrillPlan {
  readonly scenario: ScenarioName;
  readonly region: string;
  readonly durationMs: number;
  readonly rate: number;
  readonly seed: number;
  readonly faults: readonly ScheduledFault[];
}

const bad = (field: string, message: string) => new EdgeqError('INVALID_ARGUMENT', message, { details: { field } });

/** Checks a request's own fields (no deployment needed): scenario, duration, rate and seed. */
export function checkDrillRequest(r: DrillRequest): void {
  if (!(SCENARIOS as readonly string[]).includes(r.scenario)) throw bad('scenario', `unknown scenario "${r.scenario}"; the scenarios are ${SCENARIOS.join(', ')}`);
  const d = r.durationS ?? DRILL_DURATION_S_DEFAULT;
  if (!Number.isInteger(d) || d < DRILL_DURATION_S_MIN || d > DRILL_DURATION_S_MAX) throw bad('durationS', `the duration must be a whole number of seconds in [${DRILL_DURATION_S_MIN}, ${DRILL_DURATION_S_MAX}], got ${String(r.durationS)}`);
  const rate = r.rate ?? DRILL_RATE_DEFAULT;
  if (typeof rate !== 'number' || !Number.isFinite(rate) || rate <= 0 || rate > WORKLOAD_RATE_MAX) throw bad('rate', `the rate must be a number of records/s in (0, ${WORKLOAD_RATE_MAX}], got ${String(r.rate)}`);
  if (r.seed !== undefined && !(Number.isInteger(r.seed) && r.seed >= 0 && r.seed <= SEED_MAX)) throw bad('seed', `the seed must be an integer in [0, ${SEED_MAX}], got ${String(r.seed)}`);
}

/** Checks the request against the deployment and schedules its fault; `random` picks the region when none is named. */
export function planDrill(r: DrillRequest, deployment: Deployment, random: () => number = Math.random): DrillPlan {
  checkDrillRequest(r);
  const scenario = r.scenario as ScenarioName;
  const names = deployment.regions.map((x) => x.region);
  if (r.region !== undefined && !names.includes(r.region)) throw bad('region', `unknown region "${r.region}"; the deployment's regions are ${names.join(', ')}`);
  if (NEEDS_TWO_REGIONS.has(scenario) && names.length < 2) {
    throw bad('region', `${scenario} acts between regions, and this deployment has one region (${names[0] ?? 'none'}); run it on a deployment of 2 or more (edgeq dev --regions 2)`);
  }
  const seed = r.seed ?? Math.floor(random() * SEED_MAX);
  const region = r.region ?? names[Math.floor(random() * names.length)]!;
  if (NEEDS_TWO_BROKERS.has(scenario)) {
    const brokers = deployment.regions.find((x) => x.region === region)!.brokers.length;
    if (brokers < 2) throw bad('region', `${scenario} fails a broker of ${region}'s cell over to another, and that cell has ${brokers} broker; run it on a cell of 2 or more (edgeq dev --brokers-per-region 3)`);
  }
  const durationMs = (r.durationS ?? DRILL_DURATION_S_DEFAULT) * 1000;
  const faults: ScheduledFault[] = [{ fault: SCENARIO_FAULTS[scenario], region, atMs: Math.round(durationMs * FAULT_AT_SHARE), holdMs: Math.round(durationMs * FAULT_HOLD_SHARE) }];
  return { scenario, region, durationMs, rate: r.rate ?? DRILL_RATE_DEFAULT, seed, faults };
}
