/**
 * What a round must guarantee, by the checked topics' flush policy (docs/drills.md, "Flush
 * policies and what a drill checks"), and the round's verdict from the checker's result:
 *
 * - `sync`: an append is answered after an fdatasync on the leader, and a follower's fetch offset
 *   (which moves the high watermark, which answers acks=all) after its own: an acknowledged record
 *   is on disk in at least min.insync.replicas (2) brokers. It survives every campaign fault, a
 *   whole cell's power loss included: any loss fails the round.
 * - `interval` / `os`: an acknowledged record may sit in page cache on every replica. It survives
 *   while at least one ISR member did not lose power. A round in which every broker of a region's
 *   cell lost power (at once, or in power losses whose hold windows overlapped) may lose records
 *   acknowledged in that region before it; those losses are counted (`lostExcused`) and do not
 *   fail the round. Everything else still does: a loss in a round without such a power loss,
 *   unexpected, reordered, divergent offsets, bad reads.
 *
 * The rule is per round, not per record: the checker's result counts losses, not which record was
 * lost where. With `sync` (what the campaign runs by default) the distinction never arises.
 */
import type { CheckResult } from '../types.ts';
import { checkFindings } from '../report/index.ts';
import type { PowerLossEvent } from './faults.ts';

export const FLUSH_POLICIES = ['sync', 'interval', 'os'] as const;
export type FlushPolicy = (typeof FLUSH_POLICIES)[number];

/** Regions where every broker of the cell was without power at one moment of the round. */
export function cellsThatLostPower(losses: readonly PowerLossEvent[], cells: Readonly<Record<string, readonly string[]>>): string[] {
  const out: string[] = [];
  for (const [region, brokers] of Object.entries(cells)) {
    const here = losses.filter((l) => l.region === region);
    // At each power loss's start, the brokers without power then (a loss lasts from its start to its heal; unhealed: to the end).
    const hit = here.some((a) => {
      const down = new Set(here.filter((b) => b.atMs <= a.atMs && (b.healedAtMs ?? Infinity) >= a.atMs).flatMap((b) => b.brokers));
      return brokers.length > 0 && brokers.every((b) => down.has(b));
    });
    if (hit) out.push(region);
  }
  return out;
}

/** A round's verdict under the flush policy's guarantee. */
export interface RoundVerdict {
  readonly verdict: 'pass' | 'fail';
  /** Losses the policy allows (interval/os after a whole cell lost power); 0 with sync. */
  readonly lostExcused: number;
  /** Losses that fail the round. */
  readonly lost: number;
  /** What failed it, in words (empty on a pass). */
  readonly findings: string[];
}

/**
 * The round's verdict: the checker's findings, except losses the flush policy allows; plus any
 * problem the runner reported (a fault that could not be injected, no convergence, …).
 */
export function roundVerdict(check: CheckResult, o: { policy: FlushPolicy; cellsLostPower: readonly string[]; problems?: readonly string[] }): RoundVerdict {
  const excusable = o.policy !== 'sync' && o.cellsLostPower.length > 0;
  const lostExcused = excusable ? check.lost : 0;
  const lost = check.lost - lostExcused;
  const findings = checkFindings(check, lost);
  for (const p of o.problems ?? []) findings.push(p);
  // A check that could not run is a failing CheckResult with nothing counted: keep it failing.
  if (findings.length === 0 && check.verdict === 'fail' && !(excusable && check.lost > 0)) findings.push('the check failed');
  return { verdict: findings.length === 0 ? 'pass' : 'fail', lostExcused, lost, findings };
}
