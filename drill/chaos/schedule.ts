/**
 * A round's faults, drawn from its seed (pure): 1-3 fault kinds at seeded moments inside the
 * round's workload, each in a seeded region. The same seed gives the same schedule, so
 * `--round-seed X` replays a round. Draws that break a safety rule are drawn again (bounded):
 *
 * - two faults in one region overlap (their hold windows, widened by OVERLAP_MARGIN_MS for a
 *   restart) only when both pick their victims through the round's ledger (the drill faults pick
 *   theirs blind, and could kill a process another fault has paused);
 * - overlapping faults of one region take down at most the whole cell, and a whole-cell fault
 *   overlaps no other broker fault there;
 * - never a majority of a cell AND its arbiter at once, unless one fault kind does both
 *   (region-kill): the arbiter is the cell's only way to fence a new leader, and the two together
 *   are a different failure (a dead region) than either alone;
 * - a fault that reads the region's cell when injected does not overlap one that downs its gateway;
 * - link faults (region-isolate, link-degrade) never overlap each other (each heals what it saw).
 */
import type { Deployment } from '../faults/index.ts';
import type { ScheduledFault } from '../runner/index.ts';
import { CHAOS_FAULT_NAMES, chaosFaultSpecs, FAULT_IMPACT, type ChaosFaultName } from './catalogue.ts';
import { RoundLedger } from './faults.ts';
import { seededRandom } from '../../src/core/index.ts';

/** The workload of a round runs this long; faults are held inside it (the runner then waits for recovery, converges and checks). */
export const ROUND_DURATION_MS = 10_000;
/** No fault before this (the workload's first acks, the cell's leaders settled) … */
export const FAULT_AT_MS_MIN = 1_500;
/** … and every fault healed this long before the workload's planned end (acks after the heal). */
export const FAULT_END_MARGIN_MS = 1_500;
/** A fault is held between these. */
export const FAULT_HOLD_MS_MIN = 1_000;
export const FAULT_HOLD_MS_MAX = 4_000;
/** Faults per round. */
export const ROUND_FAULTS_MIN = 1;
export const ROUND_FAULTS_MAX = 3;
/** Two faults closer than this are treated as overlapping (a killed broker's restart and log replay outlast its hold). */
export const OVERLAP_MARGIN_MS = 3_000;
/** Draws of a whole schedule before settling for one fault (a draw breaks a rule far less often than 1 in 2). */
export const SCHEDULE_DRAWS_MAX = 200;

/** A scheduled fault as data (its spec comes from the round's catalogue). */
export interface PlannedFault {
  readonly name: ChaosFaultName;
  readonly region: string;
  readonly atMs: number;
  readonly holdMs: number;
}

/** The round seed of round `i` of a campaign seeded `seed` (a 32-bit mix: neighbouring rounds are unrelated). */
export function roundSeedOf(seed: number, i: number): number {
  let h = (Math.imul(seed >>> 0, 0x9e3779b1) ^ Math.imul(i + 1, 0x85ebca6b)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x7feb352d) >>> 0;
  h = Math.imul(h ^ (h >>> 15), 0x846ca68b) >>> 0;
  return (h ^ (h >>> 16)) >>> 0;
}

/** Fault kinds that make sense on `deployment` (a link fault needs two regions, a follower fault two brokers). */
export function eligibleFaults(deployment: Deployment): ChaosFaultName[] {
  const regions = deployment.regions.length;
  const brokers = Math.min(...deployment.regions.map((r) => r.brokers.length));
  return CHAOS_FAULT_NAMES.filter((n) => {
    const i = FAULT_IMPACT[n];
    if (regions < i.regionsMin || brokers < i.brokersMin) return false;
    if ((n === 'power-loss-broker' || n === 'power-loss-cell') && deployment.faultStorage !== 'power-loss') return false;
    return true;
  });
}

const overlaps = (a: PlannedFault, b: PlannedFault) => a.atMs < b.atMs + b.holdMs + OVERLAP_MARGIN_MS && b.atMs < a.atMs + a.holdMs + OVERLAP_MARGIN_MS;

/** Why a set of planned faults breaks a safety rule (see the file comment), or null. */
export function scheduleViolation(faults: readonly PlannedFault[], cellSize: number): string | null {
  for (const [i, a] of faults.entries()) {
    for (const b of faults.slice(i + 1)) {
      if (!overlaps(a, b)) continue;
      const ia = FAULT_IMPACT[a.name];
      const ib = FAULT_IMPACT[b.name];
      if (ia.links && ib.links) return `${a.name} and ${b.name} both change links at once`;
      if (a.region !== b.region) continue;
      const touches = (x: typeof ia) => x.brokers !== 0 || x.arbiter || x.gateway;
      if (touches(ia) && touches(ib) && !(ia.ledgerAware && ib.ledgerAware)) return `${a.name} and ${b.name} in ${a.region} at once, and one picks its victims blind`;
      if ((ia.needsGateway && ib.gateway) || (ib.needsGateway && ia.gateway)) return `${a.name} and ${b.name} in ${a.region}: one reads the cell through a gateway the other downs`;
    }
  }
  // Per region, at every fault's start: what the faults in place then take down together.
  for (const a of faults) {
    const together = faults.filter((b) => b.region === a.region && overlaps(a, b));
    const all = together.filter((b) => FAULT_IMPACT[b.name].brokers === 'all');
    const brokerFaults = together.filter((b) => FAULT_IMPACT[b.name].brokers !== 0);
    if (all.length > 0 && brokerFaults.length > 1) return `${all[0]!.name} in ${a.region} with another broker fault at once`;
    const down = together.reduce((n, b) => n + (FAULT_IMPACT[b.name].brokers === 'all' ? cellSize : (FAULT_IMPACT[b.name].brokers as number)), 0);
    if (down > cellSize) return `${together.map((b) => b.name).join(' + ')} take down ${down} of ${a.region}'s ${cellSize} brokers`;
    const arbiter = together.filter((b) => FAULT_IMPACT[b.name].arbiter);
    const majority = Math.floor(cellSize / 2) + 1;
    // One fault kind that does both (region-kill) is that fault, not a combination.
    if (arbiter.length > 0 && down >= majority && together.length > 1) {
      return `${together.map((b) => b.name).join(' + ')} take down a majority of ${a.region}'s cell and its arbiter`;
    }
  }
  return null;
}

/** The round's faults as data: 1-3 kinds, regions and moments from `roundSeed`, obeying the safety rules. */
export function roundPlan(roundSeed: number, deployment: Deployment, o: { durationMs?: number; faults?: readonly ChaosFaultName[] } = {}): PlannedFault[] {
  const durationMs = o.durationMs ?? ROUND_DURATION_MS;
  const kinds = o.faults ?? eligibleFaults(deployment);
  const regions = deployment.regions.map((r) => r.region);
  const cellSize = Math.min(...deployment.regions.map((r) => r.brokers.length));
  const random = seededRandom(roundSeed);
  const int = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
  const latestEnd = durationMs - FAULT_END_MARGIN_MS;
  const draw = (): PlannedFault => {
    const holdMs = int(FAULT_HOLD_MS_MIN, Math.min(FAULT_HOLD_MS_MAX, latestEnd - FAULT_AT_MS_MIN));
    return { name: kinds[int(0, kinds.length - 1)]!, region: regions[int(0, regions.length - 1)]!, atMs: int(FAULT_AT_MS_MIN, latestEnd - holdMs), holdMs };
  };
  let last: PlannedFault[] = [];
  for (let attempt = 0; attempt < SCHEDULE_DRAWS_MAX; attempt++) {
    const n = int(ROUND_FAULTS_MIN, ROUND_FAULTS_MAX);
    last = Array.from({ length: n }, draw).sort((a, b) => a.atMs - b.atMs);
    if (scheduleViolation(last, cellSize) === null) return last;
  }
  // Never reached in practice (tests draw thousands of seeds); one fault alone breaks no rule.
  return last.slice(0, 1);
}

/** The round's schedule for the runner, and the ledger its campaign faults share. */
export function roundSchedule(roundSeed: number, deployment: Deployment, o: { durationMs?: number; faults?: readonly ChaosFaultName[] } = {}): { faults: ScheduledFault[]; plan: PlannedFault[]; ledger: RoundLedger } {
  const plan = roundPlan(roundSeed, deployment, o);
  const ledger = new RoundLedger();
  const specs = chaosFaultSpecs(ledger);
  return { faults: plan.map((p) => ({ fault: specs[p.name], region: p.region, atMs: p.atMs, holdMs: p.holdMs })), plan, ledger };
}
