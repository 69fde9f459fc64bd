// Proves committed offsets are durable in a real on-disk log: they survive close and reopen (last
// write wins, tombstones delete), commit in order, respect their bound and never show a failed write.
import { afterAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../core/index.ts';
import { buildBatch, FsStorage, PartitionLog, type LogConfig } from '../log/index.ts';
import { cleanupTempDirs, tempDir } from '../testing/index.ts';
import { offsetKey, OffsetStore } from './offset-store.ts';

afterAll(cleanupTempDirs);

async function openLog(dir: string, config: Partial<LogConfig> = {}): Promise<PartitionLog> {
  return PartitionLog.open(dir, { retentionMs: -1, ...config }, { storage: new FsStorage() });
}

describe('OffsetStore', () => {
  it('rebuilds committed offsets after close and reopen, last write winning', async () => {
    const dir = await tempDir('edgeq-offsets-');
    const clock = new FakeClock(1_700_000_000_000);
    const log = await openLog(dir);
    const store = await OffsetStore.load(log, { clock });
    await store.commit('g1', [
      { topic: 't', partition: 1, offset: 10, metadata: 'a' },
      { topic: 't', partition: 0, offset: 5 },
    ]);
    clock.advance(1000);
    await store.commit('g1', [{ topic: 't', partition: 1, offset: 12, metadata: 'b' }]);
    await store.commit('g2', [{ topic: 'u', partition: 0, offset: 1 }]);
    expect(store.get('g1', 't', 1)).toEqual({ offset: 12, metadata: 'b', commitTimestampMs: 1_700_000_001_000 });
    expect(store.size).toBe(3);
    await log.close();

    const again = await openLog(dir);
    const reloaded = await OffsetStore.load(again);
    expect(reloaded.groupOffsets('g1')).toEqual([
      { topic: 't', partition: 0, offset: 5, metadata: '', commitTimestampMs: 1_700_000_000_000 },
      { topic: 't', partition: 1, offset: 12, metadata: 'b', commitTimestampMs: 1_700_000_001_000 },
    ]);
    expect(reloaded.get('g2', 'u', 0)?.offset).toBe(1);
    expect(reloaded.size).toBe(3);
    await again.close();
  });

  it('deletes a group with tombstones that replay as deletions', async () => {
    const dir = await tempDir('edgeq-offsets-');
    const log = await openLog(dir);
    const store = await OffsetStore.load(log, { tombstonesPerBatchMax: 2 });
    await store.commit('gone', [0, 1, 2, 3, 4].map((p) => ({ topic: 't', partition: p, offset: p })));
    await store.commit('kept', [{ topic: 't', partition: 0, offset: 7 }]);
    expect(await store.deleteGroup('gone')).toBe(5);
    expect(store.hasGroup('gone')).toBe(false);
    expect(store.size).toBe(1);
    await log.close();

    const again = await openLog(dir);
    const reloaded = await OffsetStore.load(again);
    expect(reloaded.groupIds()).toEqual(['kept']);
    expect(reloaded.get('kept', 't', 0)?.offset).toBe(7);
    await again.close();
  });

  it('applies concurrent commits in issue order and replays many segments', async () => {
    const dir = await tempDir('edgeq-offsets-');
    const log = await openLog(dir, { segmentBytesMax: 4096, messageBytesMax: 4096, flushPolicy: 'sync' });
    const store = await OffsetStore.load(log);
    const commits = Array.from({ length: 60 }, (_, i) => store.commit('g', [{ topic: 't', partition: i % 3, offset: i }]));
    await Promise.all(commits);
    expect(store.groupOffsets('g').map((o) => o.offset)).toEqual([57, 58, 59]);
    expect(log.segmentCount).toBeGreaterThan(1);
    await log.close();

    const again = await openLog(dir, { segmentBytesMax: 4096, messageBytesMax: 4096 });
    const reloaded = await OffsetStore.load(again, { replayReadBytesMax: 100 });
    expect(reloaded.groupOffsets('g').map((o) => o.offset)).toEqual([57, 58, 59]);
    await again.close();
  });

  it('refuses entries beyond committedOffsetsMax with QUEUE_FULL, storing nothing', async () => {
    const log = await openLog(await tempDir('edgeq-offsets-'));
    const store = await OffsetStore.load(log, { committedOffsetsMax: 2 });
    await store.commit('g', [{ topic: 't', partition: 0, offset: 1 }]);
    await expect(
      store.commit('g', [
        { topic: 't', partition: 1, offset: 1 },
        { topic: 't', partition: 2, offset: 1 },
      ]),
    ).rejects.toMatchObject({ code: 'QUEUE_FULL' });
    expect(store.size).toBe(1);
    const end = log.logEndOffset;
    // Updating an existing entry and filling the last slot are both fine.
    await store.commit('g', [
      { topic: 't', partition: 0, offset: 2 },
      { topic: 't', partition: 1, offset: 2 },
    ]);
    expect(log.logEndOffset).toBe(end + 2);
    expect(store.size).toBe(2);
    await log.close();
  });

  it('changes nothing when the append fails or the input is bad', async () => {
    const log = await openLog(await tempDir('edgeq-offsets-'));
    const store = await OffsetStore.load(log);
    await expect(store.commit('g', [{ topic: 't', partition: 0, offset: -5 }])).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await log.close();
    await expect(store.commit('g', [{ topic: 't', partition: 0, offset: 1 }])).rejects.toMatchObject({ code: 'LOG_CLOSED' });
    expect(store.get('g', 't', 0)).toBeUndefined();
    expect(store.size).toBe(0);
  });

  it('refuses to load a damaged record and skips records of an unknown key version', async () => {
    const dir = await tempDir('edgeq-offsets-');
    const log = await openLog(dir);
    await log.append(await buildBatch([{ key: JSON.stringify([99, 'future']), value: 'x' }]));
    await log.append(await buildBatch([{ key: offsetKey('g', 't', 0), value: '{"offset":3,"metadata":"","commitTimestampMs":1}' }]));
    expect((await OffsetStore.load(log)).get('g', 't', 0)?.offset).toBe(3);
    await log.append(await buildBatch([{ key: 'not json', value: 'x' }]));
    await expect(OffsetStore.load(log)).rejects.toMatchObject({ code: 'CORRUPT_LOG' });
    await log.close();
  });
});
