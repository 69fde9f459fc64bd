// Proves a broker's readiness: not ready while starting or without a valid lease and current watch; in a cell ready only when in the ISR (as the cell's state says) of every local replica and recovering none, naming the first partitions behind; a lone broker ready once started.
import { describe, expect, it } from 'vitest';
import type { CellController, PartitionState } from './controller.ts';
import { brokerReadiness, READINESS_PARTITIONS_NAMED_MAX, type ReplicaView } from './readiness.ts';

function cell(o: { canLead?: boolean; states?: Record<string, PartitionState> } = {}): CellController {
  return {
    canLead: () => o.canLead ?? true,
    partitionState: (topic: string, p: number) => o.states?.[`${topic}/${p}`],
  } as unknown as CellController;
}
const replica = (topic: string, index: number, isr: number[], recovering: unknown = null): ReplicaView => ({ topic, index, isr, recovering });
const state = (isr: number[]): PartitionState => ({ leader: isr[0] ?? -1, leaderEpoch: 3, isr, replicas: [1, 2, 3] });

describe('brokerReadiness', () => {
  it('is not ready while starting, whatever its replicas', () => {
    const r = brokerReadiness({ brokerId: 2, started: false, cell: cell(), replicas: [replica('t', 0, [1, 2, 3])] });
    expect(r.ready).toBe(false);
    expect(r.reasons[0]).toMatch(/starting/);
  });

  it('is not ready without a valid lease or a current watch', () => {
    const r = brokerReadiness({ brokerId: 2, started: true, cell: cell({ canLead: false }), replicas: [] });
    expect(r).toMatchObject({ ready: false, reasons: [expect.stringMatching(/lease/)] });
  });

  it('is ready in the ISR of every local replica, by the cell\'s state rather than the replica\'s own view', () => {
    const states = { 't/0': state([1, 2, 3]), 't/1': state([2, 3]) };
    // The replica's own (stale) ISR says otherwise for t/1: the cell's state decides.
    const r = brokerReadiness({ brokerId: 2, started: true, cell: cell({ states }), replicas: [replica('t', 0, [1, 2, 3]), replica('t', 1, [3])] });
    expect(r).toEqual({ ready: true, reasons: [], replicas: 2, notInIsr: 0, recovering: 0, behind: [] });
  });

  it('is not ready out of the ISR of one partition, or with a recovering replica, and names them', () => {
    const states = { 't/0': state([1, 3]), 't/1': state([1, 2, 3]) };
    const r = brokerReadiness({ brokerId: 2, started: true, cell: cell({ states }), replicas: [replica('t', 0, [1, 2, 3]), replica('t', 1, [1, 2, 3], { reason: 'unclean' })] });
    expect(r.ready).toBe(false);
    expect(r).toMatchObject({ notInIsr: 1, recovering: 1, behind: ['t/0', 't/1'] });
    expect(r.reasons).toEqual([expect.stringMatching(/not in the ISR of 1/), expect.stringMatching(/1 replica\(s\) recovering/)]);
  });

  it('names at most READINESS_PARTITIONS_NAMED_MAX partitions, and counts them all', () => {
    const n = READINESS_PARTITIONS_NAMED_MAX + 5;
    const replicas = Array.from({ length: n }, (_, i) => replica('big', i, [1]));
    const r = brokerReadiness({ brokerId: 2, started: true, cell: cell(), replicas });
    expect(r.notInIsr).toBe(n);
    expect(r.behind).toHaveLength(READINESS_PARTITIONS_NAMED_MAX);
  });

  it('a lone broker is ready once started: its replicas are their own ISR', () => {
    expect(brokerReadiness({ brokerId: 1, started: true, cell: null, replicas: [replica('t', 0, [1])] }).ready).toBe(true);
  });
});
