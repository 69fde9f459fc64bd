/**
 * Who may take over a partition whose leader is gone: a pure function of the partition's state,
 * the live brokers, the topic's election setting and each replica's eligibility, so the rule is
 * tested on its own and every broker of the cell computes the same order from the same inputs.
 *
 * Clean election: the live, eligible members of the ISR, in ISR order (the first is the preferred
 * candidate; the others wait their rank's delay, so the preferred one normally wins). A replica
 * that is not eligible (it may have lost records it had acknowledged, e.g. after an unclean
 * shutdown, and has not caught up since) is never a candidate. Only when no ISR member can take
 * over, and the topic enables `unclean.leader.election.enable`, the other live, eligible replicas
 * may, in replica order, at the cost of the records only the ISR held.
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
}

/** The brokers that may take over `state`'s partition, best first; empty when none may. */
export function electionCandidates(state: PartitionState, options: CandidateOptions): number[] {
  const eligible = options.isEligible ?? (() => true);
  const can = (id: number): boolean => options.isLive(id) && eligible(id);
  const clean = unique(state.isr).filter((id) => state.replicas.includes(id) && can(id));
  if (clean.length > 0 || !options.uncleanLeaderElection) return clean;
  return unique(state.replicas).filter(can);
}

function unique(ids: number[]): number[] {
  return [...new Set(ids)];
}
