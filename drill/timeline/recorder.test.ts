// Proves the timeline recorder does not lose changes around failed polls: when one call of a poll fails (a slow /v1/cell while a broker is down), the rest of the snapshot is used and the failed part is carried from the last good poll, so the leader change shows once when /v1/cell answers again; after a stretch where the gateway answered nothing, the changes made meanwhile are reported on its return, with the region's unreachable and reachable events.
import { describe, expect, it } from 'vitest';
import { TimelineRecorder } from './recorder.ts';

type State = { mesh: boolean; cell: boolean; leader: number; epoch: number; member: string };

function fakeGateway(state: State) {
  return async (url: string): Promise<Response> => {
    const json = (body: unknown) => new Response(JSON.stringify(body), { status: 200, headers: { 'content-type': 'application/json' } });
    if (url.endsWith('/v1/mesh')) return state.mesh ? json({ members: [{ member: 'eu-gw', region: 'eu-west', state: state.member }] }) : Promise.reject(new Error('timeout'));
    if (url.endsWith('/v1/cell')) return state.cell ? json({ partitions: [{ topic: 't', partition: 0, leaderId: state.leader, leaderEpoch: state.epoch, isr: [1, 2] }] }) : Promise.reject(new Error('timeout'));
    return json({ capacityPerSec: 100 });
  };
}

describe('TimelineRecorder across failed polls', () => {
  it('reports a change made while /v1/cell failed once, when it answers again', async () => {
    const state: State = { mesh: true, cell: true, leader: 1, epoch: 1, member: 'alive' };
    let t = 0;
    const rec = new TimelineRecorder({ gateways: [], fetch: fakeGateway(state), now: () => ++t });
    await rec.pollOnce('us-east', 'http://gw');
    state.cell = false;
    state.leader = 2;
    state.epoch = 2;
    await rec.pollOnce('us-east', 'http://gw');
    expect(rec.timeline()).toEqual([]);
    state.cell = true;
    await rec.pollOnce('us-east', 'http://gw');
    await rec.pollOnce('us-east', 'http://gw');
    expect(rec.timeline().map((e) => `${e.event} ${e.detail}`)).toEqual(['cell.leader t/0: leader 1 → 2 (epoch 1 → 2)']);
  });

  it('reports what changed while the gateway answered nothing, on its return', async () => {
    const state: State = { mesh: true, cell: true, leader: 1, epoch: 1, member: 'alive' };
    let t = 0;
    const rec = new TimelineRecorder({ gateways: [], fetch: fakeGateway(state), now: () => ++t });
    await rec.pollOnce('us-east', 'http://gw');
    Object.assign(state, { mesh: false, cell: false });
    await rec.pollOnce('us-east', 'http://gw');
    await rec.pollOnce('us-east', 'http://gw');
    Object.assign(state, { mesh: true, cell: true, leader: 2, epoch: 2, member: 'suspect' });
    await rec.pollOnce('us-east', 'http://gw');
    expect(rec.timeline().map((e) => e.event)).toEqual(['region.unreachable', 'region.reachable', 'mesh.member', 'cell.leader']);
    expect(rec.timeline().find((e) => e.event === 'mesh.member')!.detail).toBe('eu-gw (eu-west): alive → suspect');
  });
});
