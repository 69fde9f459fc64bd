/**
 * Who may take over a partition whose leader is gone: a pure function of the partition's state,
 * the live brokers, the topic's election setting and each replica's eligibility, so the rule is
 * tested on its own and every broker of the cell computes the same order from the same inputs.
 *
 * Clean election: the live, eligible members of the ISR, in ISR order (the first is the preferred
 * candidate; the others wait their rank's delay, so the preferred one normally wins). A replica
 * that is not eligible (it may have lost records it had acknowledged, e.g. after an unclean
 * shutdown, and has not caught up since) is never a candidate.
 *
 * When no ISR member can take over and every replica of the partition is live and recovering
 * (the whole cell lost power, say), waiting would never end: the replica whose log holds the
 * most is elected, by its latest epoch, then its log end, then the lowest id (KIP-966's unclean
 * recovery, done by every broker alike from the entries the replicas published). When some
 * replica is not live, the cell waits for it: it may be the one that holds everything.
 *
 * Only then, and when the topic enables `unclean.leader.election.enable`, the other live,
 * eligible replicas may take over, in replica order, at the cost of the records only the ISR held.
 */
import type { PartitionState } from '../../src/broker/index.ts';

/** The inputs besides the state. */
export interface CandidateOptions {
  /** Whether a broker is registered in the cell now. */
  isLive(brokerId: number): boolean;
  /** The topic's `unclean.leader.election.enable`. */
  uncleanLeaderElection: boolean;
  /** Whether a broker's replica of this partition may lead (default: all may). */
  isEligible?(brokerId: number): boolean;
  /** A recovering replica's latest epoch and log end, as it published them; undefined: not recovering. */
  recoveryOf?(brokerId: number): { lastEpoch: number; logEndOffset: number } | undefined;
}

/** The brokers that may take over `state`'s partition, best first; empty when none may. */
export function electionCandidates(state: PartitionState, options: CandidateOptions): number[] {
  const eligible = options.isEligible ?? (() => true);
  const can = (id: number): boolean => options.isLive(id) && eligible(id);
  const clean = unique(state.isr).filter((id) => state.replicas.includes(id) && can(id));
  if (clean.length > 0) return clean;
  const replicas = unique(state.replicas);
  const recovery = options.recoveryOf;
  if (recovery && replicas.length > 0 && replicas.every((id) => options.isLive(id) && recovery(id) !== undefined)) {
    const best = [...replicas].sort((a, b) => {
      const ra = recovery(a)!;
      const rb = recovery(b)!;
      return rb.lastEpoch - ra.lastEpoch || rb.logEndOffset - ra.logEndOffset || a - b;
    })[0]!;
    return [best];
  }
  return options.uncleanLeaderElection ? replicas.filter(can) : [];
}

function unique(ids: number[]): number[] {
  return [...new Set(ids)];
}
