/** Proves the election candidate rule on its own: live, eligible ISR members in ISR order; when every replica is live and recovering, the one whose log holds the most; other live, eligible replicas only with unclean election and no ISR member left; never an ineligible or dead broker, or one holding no replica. */
import { describe, expect, it } from 'vitest';
import type { PartitionState } from '../../src/broker/index.ts';
import { electionCandidates } from './candidates.ts';

const state = (isr: number[], replicas = [1, 2, 3], leader = -1): PartitionState => ({ leader, leaderEpoch: 4, isr, replicas });
const live = (...ids: number[]) => (id: number) => ids.includes(id);

describe('electionCandidates', () => {
  it('lists the live ISR members in ISR order, the first being the preferred candidate', () => {
    expect(electionCandidates(state([2, 3, 1]), { isLive: live(1, 2, 3), uncleanLeaderElection: false })).toEqual([2, 3, 1]);
    expect(electionCandidates(state([2, 3, 1]), { isLive: live(1, 3), uncleanLeaderElection: false })).toEqual([3, 1]);
  });

  it('leaves out replicas that are not eligible, wherever they stand in the ISR', () => {
    const isEligible = (id: number) => id !== 2;
    expect(electionCandidates(state([2, 3, 1]), { isLive: live(1, 2, 3), uncleanLeaderElection: false, isEligible })).toEqual([3, 1]);
    // The only live ISR member is not eligible: nobody, even with other replicas live.
    expect(electionCandidates(state([2]), { isLive: live(1, 2, 3), uncleanLeaderElection: false, isEligible })).toEqual([]);
  });

  it('elects outside the ISR only with unclean election, and only when no ISR member can take over', () => {
    expect(electionCandidates(state([1]), { isLive: live(2, 3), uncleanLeaderElection: false })).toEqual([]);
    expect(electionCandidates(state([1]), { isLive: live(2, 3), uncleanLeaderElection: true })).toEqual([2, 3]);
    // A live ISR member wins over unclean candidates.
    expect(electionCandidates(state([1, 3]), { isLive: live(2, 3), uncleanLeaderElection: true })).toEqual([3]);
    // Unclean candidates must be eligible too.
    expect(electionCandidates(state([1]), { isLive: live(2, 3), uncleanLeaderElection: true, isEligible: (id) => id === 3 })).toEqual([3]);
  });

  it('when every replica is live and recovering, elects the one holding the most: latest epoch, then log end, then lowest id', () => {
    const logs: Record<number, { lastEpoch: number; logEndOffset: number }> = { 1: { lastEpoch: 3, logEndOffset: 90 }, 2: { lastEpoch: 4, logEndOffset: 10 }, 3: { lastEpoch: 4, logEndOffset: 12 } };
    const recoveryOf = (id: number) => logs[id];
    const opts = { isLive: live(1, 2, 3), uncleanLeaderElection: false, isEligible: () => false, recoveryOf };
    expect(electionCandidates(state([1, 2, 3]), opts)).toEqual([3]);
    expect(electionCandidates(state([1]), opts)).toEqual([3]); // ISR membership does not matter then
    logs[2] = { lastEpoch: 4, logEndOffset: 12 };
    expect(electionCandidates(state([1, 2, 3]), opts)).toEqual([2]);
    // One replica down: it may be the one that holds everything, so the cell waits for it.
    expect(electionCandidates(state([1, 2, 3]), { ...opts, isLive: live(1, 2) })).toEqual([]);
    // One replica not recovering (but not eligible for another reason, or not in the ISR): no rule applies.
    expect(electionCandidates(state([2, 3]), { ...opts, recoveryOf: (id: number) => (id === 1 ? undefined : logs[id]) })).toEqual([]);
    // A clean ISR member always comes first.
    expect(electionCandidates(state([1, 2, 3]), { ...opts, isEligible: (id: number) => id === 1 })).toEqual([1]);
  });

  it('never names a broker that holds no replica, or one twice', () => {
    expect(electionCandidates(state([4, 2, 2, 1]), { isLive: live(1, 2, 3, 4), uncleanLeaderElection: false })).toEqual([2, 1]);
    expect(electionCandidates(state([]), { isLive: live(1, 2, 3, 4), uncleanLeaderElection: true })).toEqual([1, 2, 3]);
  });

  it('does not depend on who leads now (the caller decides whether an election is due)', () => {
    expect(electionCandidates(state([1, 2], [1, 2, 3], 1), { isLive: live(1, 2), uncleanLeaderElection: false })).toEqual([1, 2]);
  });
});
