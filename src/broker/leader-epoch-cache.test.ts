// Proves the leader-epoch history that KIP-101 truncation rests on: where each epoch starts and
// ends, what truncation and resets leave, and that a reopened log gets the same history back from
// its file and its batch headers.
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../core/index.ts';
import { buildBatch, MemoryStorage, PartitionLog } from '../log/index.ts';
import { LEADER_EPOCHS_FILE, LeaderEpochCache } from './leader-epoch-cache.ts';

const DIR = '/data/t.x/0';

describe('LeaderEpochCache', () => {
  it('keeps epochs in order and ignores an epoch that is not newer', () => {
    const c = new LeaderEpochCache(new MemoryStorage(), DIR);
    expect(c.latestEpoch).toBe(-1);
    c.assign(1, 0);
    c.assign(3, 10);
    c.assign(2, 12); // older than the latest: ignored
    c.assign(3, 15); // the same epoch again: ignored
    c.assign(-1, 20); // no epoch: ignored
    expect(c.list()).toEqual([
      { epoch: 1, startOffset: 0 },
      { epoch: 3, startOffset: 10 },
    ]);
    expect(c.latestEpoch).toBe(3);
  });

  it('answers where an epoch starts and ends, for epochs it has, between them and below them', () => {
    const c = new LeaderEpochCache(new MemoryStorage(), DIR);
    c.assign(1, 0);
    c.assign(3, 10);
    c.assign(6, 25);
    expect(c.startOffsetOf(3)).toBe(10);
    expect(c.startOffsetOf(4)).toBeUndefined();
    expect(c.startOffsetOf(0)).toBeUndefined();
    expect(c.endOffsetFor(1, 40)).toEqual({ epoch: 1, endOffset: 10 });
    // An epoch this log never had: the largest at or below it, ending where the next starts.
    expect(c.endOffsetFor(4, 40)).toEqual({ epoch: 3, endOffset: 25 });
    expect(c.endOffsetFor(6, 40)).toEqual({ epoch: 6, endOffset: 40 });
    expect(c.endOffsetFor(9, 40)).toEqual({ epoch: 6, endOffset: 40 });
    expect(c.endOffsetFor(0, 40)).toEqual({ epoch: -1, endOffset: -1 });
  });

  it('drops the epochs that start at or after a truncation point, and everything at a reset', () => {
    const c = new LeaderEpochCache(new MemoryStorage(), DIR);
    c.assign(1, 0);
    c.assign(3, 10);
    c.assign(6, 25);
    c.truncateFrom(25);
    expect(c.list()).toEqual([
      { epoch: 1, startOffset: 0 },
      { epoch: 3, startOffset: 10 },
    ]);
    c.truncateFrom(11);
    expect(c.latestEpoch).toBe(3);
    c.clear();
    expect(c.list()).toEqual([]);
  });

  it('rebuilds from its file and from the headers written after the file', async () => {
    const storage = new MemoryStorage();
    const clock = new FakeClock();
    const log = await PartitionLog.open(DIR, {}, { storage, clock });
    await log.append(await buildBatch([{ value: 'a' }, { value: 'b' }]), { leaderEpoch: 1 });
    await log.append(await buildBatch([{ value: 'c' }]), { leaderEpoch: 2 });
    const c = new LeaderEpochCache(storage, DIR);
    c.assign(1, 0);
    c.assign(2, 2);
    await c.save();
    // Written after the file was saved: only the headers know epoch 4.
    await log.append(await buildBatch([{ value: 'd' }]), { leaderEpoch: 4 });
    const again = new LeaderEpochCache(storage, DIR);
    await again.rebuild(log);
    expect(again.list()).toEqual([
      { epoch: 1, startOffset: 0 },
      { epoch: 2, startOffset: 2 },
      { epoch: 4, startOffset: 3 },
    ]);
    // A damaged file costs only the shortcut: the headers give the same history.
    await storage.writeFileAtomic(`${DIR}/${LEADER_EPOCHS_FILE}`, Buffer.from('{not json'));
    const fromHeaders = new LeaderEpochCache(storage, DIR);
    await fromHeaders.rebuild(log);
    expect(fromHeaders.list()).toEqual(again.list());
  });

  it('forgets entries the file has past the log end (the log was cut shorter by recovery)', async () => {
    const storage = new MemoryStorage();
    const log = await PartitionLog.open(DIR, {}, { storage, clock: new FakeClock() });
    await log.append(await buildBatch([{ value: 'a' }]), { leaderEpoch: 1 });
    const c = new LeaderEpochCache(storage, DIR);
    c.assign(1, 0);
    c.assign(5, 7);
    await c.save();
    const again = new LeaderEpochCache(storage, DIR);
    await again.rebuild(log);
    expect(again.list()).toEqual([{ epoch: 1, startOffset: 0 }]);
  });
});
