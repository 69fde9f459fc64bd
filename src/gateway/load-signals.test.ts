// Proves the gateway's load-signal source on a fake clock over a fake cell: the cell's figures (under-replicated partitions, ISR shrinks between polls, the highest broker fsync p99) come from a background poll at most once per interval and never two at once; a cell that fails, hangs past the poll bound or goes stale reads as NaN and counts failures; the mesh backlog and RSS are read, and a throwing mesh reads as NaN.
import { describe, expect, it } from 'vitest';
import type { CellStatus } from '../client/index.ts';
import { FakeClock } from '../core/index.ts';
import { CELL_POLL_TIMEOUT_MS, CELL_STALE_INTERVALS, GatewayLoadSignals } from './load-signals.ts';
import type { GatewayMesh } from './mesh.ts';

const INTERVAL_MS = 1000;

function status(isrs: number[][], fsync: number[] = [1, 2, 3]): CellStatus {
  return {
    cellId: 'c',
    brokers: fsync.map((f, i) => ({ id: i + 1, pid: 1, host: '127.0.0.1', port: 1, region: 'local', alive: true, fsyncP99Ms: f })),
    partitions: isrs.map((isr, partition) => ({ topic: 't', partition, leaderId: 1, leaderEpoch: 0, isr, replicas: [1, 2, 3], highWatermark: 0, logEndOffset: 0, logStartOffset: 0 })),
    unreachable: [],
  };
}

/** A cell whose next answers the test decides; counts the polls. */
class FakeCell {
  calls = 0;
  next: () => Promise<CellStatus> = () => Promise.resolve(status([[1, 2, 3], [1, 2, 3]]));
  cellStatus(): Promise<CellStatus> {
    this.calls++;
    return this.next();
  }
}

/** Lets the poll's promise chain run. */
const settle = () => new Promise((r) => setImmediate(r));

describe('GatewayLoadSignals', () => {
  it('reads the cell\'s figures from a background poll, ISR shrinks once', async () => {
    const clock = new FakeClock();
    const cell = new FakeCell();
    const s = new GatewayLoadSignals({ cell, intervalMs: INTERVAL_MS, clock });
    s.start();
    await settle();
    expect(cell.calls).toBe(1);
    expect(s.read()).toMatchObject({ underReplicatedPartitions: 0, isrShrinks: 0, fsyncP99Ms: 3, replicationBacklogRecords: 0 });
    // Broker 3 leaves the ISR of partition 0, broker 2 and 3 that of partition 1.
    cell.next = () => Promise.resolve(status([[1, 2], [1]], [4, 9, 2]));
    clock.advance(INTERVAL_MS);
    await settle();
    expect(cell.calls).toBe(2);
    expect(s.read()).toMatchObject({ underReplicatedPartitions: 2, isrShrinks: 3, fsyncP99Ms: 9 });
    // Read again before the next poll: the shrinks were counted once.
    expect(s.read()).toMatchObject({ underReplicatedPartitions: 2, isrShrinks: 0 });
    const read = s.read();
    expect(read.rssMb).toBeGreaterThan(0);
    expect(read.eventLoopDelayP99Ms).toBeGreaterThanOrEqual(0);
    s.close();
    expect(clock.pendingTimers()).toBe(0);
  });

  it('a failing, hanging or stale cell reads as NaN and counts failures; a hanging poll is not stacked', async () => {
    const clock = new FakeClock();
    const cell = new FakeCell();
    cell.next = () => Promise.reject(new Error('no cell'));
    const s = new GatewayLoadSignals({ cell, intervalMs: INTERVAL_MS, clock });
    s.start();
    await settle();
    const failed = s.read();
    expect([failed.underReplicatedPartitions, failed.isrShrinks, failed.fsyncP99Ms]).toEqual([NaN, NaN, NaN]);
    expect(s.failures()).toMatchObject({ underReplicatedPartitions: 1, isrShrinks: 1, fsyncP99Ms: 1 });

    // Good once, then a poll that never answers: no second poll while it hangs, and the figures go stale.
    cell.next = () => Promise.resolve(status([[1, 2, 3]]));
    clock.advance(INTERVAL_MS);
    await settle();
    expect(s.read().underReplicatedPartitions).toBe(0);
    cell.next = () => new Promise<CellStatus>(() => undefined);
    const before = cell.calls;
    for (let i = 0; i < CELL_STALE_INTERVALS + 2; i++) {
      clock.advance(INTERVAL_MS);
      await settle();
    }
    expect(cell.calls).toBe(before + 1);
    expect(s.read().underReplicatedPartitions).toBeNaN();
    s.close();
  });

  it('drops an answer that came after the poll bound', async () => {
    const clock = new FakeClock();
    const cell = new FakeCell();
    let answer: (st: CellStatus) => void = () => undefined;
    cell.next = () => new Promise<CellStatus>((r) => (answer = r));
    const s = new GatewayLoadSignals({ cell, intervalMs: INTERVAL_MS, clock });
    s.start();
    clock.advance(CELL_POLL_TIMEOUT_MS + 1);
    answer(status([[1]]));
    await settle();
    expect(s.read().underReplicatedPartitions).toBeNaN();
    s.close();
  });

  it('reads the mesh\'s backlog; a mesh that throws reads as NaN', () => {
    const clock = new FakeClock();
    let backlog = () => 1234;
    const mesh = { replicationBacklogRecords: () => backlog() } as unknown as GatewayMesh;
    const s = new GatewayLoadSignals({ cell: new FakeCell(), mesh, intervalMs: INTERVAL_MS, clock });
    expect(s.read().replicationBacklogRecords).toBe(1234);
    backlog = () => {
      throw new Error('no mesh state');
    };
    expect(s.read().replicationBacklogRecords).toBeNaN();
    expect(s.failures().replicationBacklogRecords).toBe(1);
    s.close();
  });
});
