/** Proves the producer-id allocator over a lone broker's file: ids are never handed out twice across restarts, a bumped epoch fences the old instance before and after a restart, unknown ids and stale epochs are refused, the epoch limit moves a producer to a new id, and a bump that could not be saved is not handed out. */
import { describe, expect, it } from 'vitest';
import { MemoryStorage } from '../log/index.ts';
import { PRODUCER_EPOCH_MAX, PRODUCER_ID_BLOCK_SIZE, PRODUCER_IDS_FILE, ProducerIds } from './producer-ids.ts';

const DIR = '/data';

async function open(storage: MemoryStorage): Promise<ProducerIds> {
  await storage.mkdir(DIR);
  return ProducerIds.open(storage, DIR);
}

describe('ProducerIds over the file store', () => {
  it('never hands out an id twice, even after a restart in the middle of a block', async () => {
    const storage = new MemoryStorage();
    const first = await open(storage);
    const a = await first.init(-1, -1);
    const b = await first.init(-1, -1);
    expect([a, b]).toEqual([
      { producerId: 0, producerEpoch: 0 },
      { producerId: 1, producerEpoch: 0 },
    ]);
    const again = await open(storage);
    // The rest of the first block is skipped: it may have been handed out before the crash.
    expect(await again.init(-1, -1)).toEqual({ producerId: PRODUCER_ID_BLOCK_SIZE, producerEpoch: 0 });
  });

  it('bumps epochs durably, fencing the older instance across a restart, and refuses unknown ids', async () => {
    const storage = new MemoryStorage();
    const ids = await open(storage);
    const { producerId } = await ids.init(-1, -1);
    expect(await ids.init(producerId, 0)).toEqual({ producerId, producerEpoch: 1 });
    expect(ids.currentEpoch(producerId)).toBe(1);
    await expect(ids.init(producerId, 0)).rejects.toMatchObject({ code: 'INVALID_PRODUCER_EPOCH' });
    const again = await open(storage);
    expect(again.currentEpoch(producerId)).toBe(1);
    await expect(again.init(producerId, 0)).rejects.toMatchObject({ code: 'INVALID_PRODUCER_EPOCH' });
    expect(await again.init(producerId, 1)).toEqual({ producerId, producerEpoch: 2 });
    await expect(again.init(PRODUCER_ID_BLOCK_SIZE * 5, 0)).rejects.toMatchObject({ code: 'UNKNOWN_PRODUCER_ID' });
  });

  it('moves a producer at the epoch limit to a new id', async () => {
    const storage = new MemoryStorage();
    await storage.mkdir(DIR);
    await storage.writeFileAtomic(`${DIR}/${PRODUCER_IDS_FILE}`, Buffer.from(JSON.stringify({ nextBlockStart: 10, epochs: { 3: PRODUCER_EPOCH_MAX } })));
    const ids = await ProducerIds.open(storage, DIR);
    const next = await ids.init(3, PRODUCER_EPOCH_MAX);
    expect(next).toEqual({ producerId: 10, producerEpoch: 0 });
  });

  it('does not hand out an epoch it could not save, and keeps the one it had', async () => {
    const storage = new MemoryStorage();
    const ids = await open(storage);
    const { producerId } = await ids.init(-1, -1);
    storage.failNext('writeFileAtomic');
    await expect(ids.init(producerId, 0)).rejects.toBeDefined();
    expect(ids.currentEpoch(producerId)).toBeUndefined();
    expect(await ids.init(producerId, 0)).toEqual({ producerId, producerEpoch: 1 });
  });
});
