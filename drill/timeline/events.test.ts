// Proves the timeline's diffing of successive snapshots: member state changes, leader changes
// (leader or epoch), ISR changes whatever the order, capacity moves past CAPACITY_CHANGE_MIN only,
// a gateway going silent and coming back; and the detection time from a timeline.
import { describe, expect, it } from 'vitest';
import { detectMs, diffSnapshots, type RegionSnapshot } from './events.ts';

const snap = (t: number, o: Partial<RegionSnapshot> = {}): RegionSnapshot => ({
  region: 'eu-west',
  t,
  members: { 'us-east-1': { region: 'us-east', state: 'alive' }, 'eu-west-1': { region: 'eu-west', state: 'alive' } },
  partitions: { 'g/0': { leader: 1, epoch: 3, isr: [1, 2, 3] } },
  capacityPerSec: 1000,
  ...o,
});

describe('timeline diff', () => {
  it('nothing changed: no events; the first snapshot gives none either', () => {
    expect(diffSnapshots(null, snap(1))).toEqual([]);
    expect(diffSnapshots(snap(1), snap(2))).toEqual([]);
    // The same ISR in another order is no change.
    expect(diffSnapshots(snap(1), snap(2, { partitions: { 'g/0': { leader: 1, epoch: 3, isr: [3, 2, 1] } } }))).toEqual([]);
  });

  it('member states, leaders, ISRs and large capacity moves are events', () => {
    const after = snap(2, {
      members: { 'us-east-1': { region: 'us-east', state: 'suspect' }, 'eu-west-1': { region: 'eu-west', state: 'alive' } },
      partitions: { 'g/0': { leader: 2, epoch: 4, isr: [2, 3] } },
      capacityPerSec: 500,
    });
    expect(diffSnapshots(snap(1), after).map((e) => [e.event, e.detail])).toEqual([
      ['mesh.member', 'us-east-1 (us-east): alive → suspect'],
      ['cell.leader', 'g/0: leader 1 → 2 (epoch 3 → 4)'],
      ['cell.isr', 'g/0: ISR [1,2,3] → [2,3]'],
      ['limiter.capacity', '1000 → 500 records/s'],
    ]);
    expect(diffSnapshots(snap(1), snap(2, { capacityPerSec: 1100 }))).toEqual([]);
  });

  it('a gateway that stops answering and answers again', () => {
    const silent = snap(2, { members: null, partitions: null, capacityPerSec: null });
    expect(diffSnapshots(snap(1), silent).map((e) => e.event)).toEqual(['region.unreachable']);
    expect(diffSnapshots(silent, snap(3)).map((e) => e.event)).toEqual(['region.reachable']);
  });

  it('detection: the first suspect/dead of the region, or the first new leader, after the fault', () => {
    const timeline = [
      { t: 90, event: 'cell.leader', detail: 'g/0: leader 1 → 2 (epoch 3 → 4)', region: 'eu-west' },
      { t: 120, event: 'mesh.member', detail: 'us-east-1 (us-east): alive → suspect', region: 'eu-west' },
      { t: 150, event: 'cell.leader', detail: 'g/0: leader 2 → 3 (epoch 4 → 5)', region: 'eu-west' },
    ];
    expect(detectMs(timeline, 100, { memberOf: 'us-east' })).toBe(20);
    expect(detectMs(timeline, 100, { leader: true })).toBe(50);
    expect(detectMs(timeline, 100, { memberOf: 'ap-south' })).toBeNull();
  });
});
