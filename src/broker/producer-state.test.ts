// Proves the idempotent producer's guard on a real log: in-order batches are written, a retry of a
// written batch answers with its original offsets and writes nothing, a gap or an old epoch is
// refused with a typed error and nothing written, and the state survives reopening the log (from
// the snapshot, from the log alone, and with a snapshot ahead of a truncated log).
import { describe, expect, it } from 'vitest';
import { isEdgeqError } from '../core/index.ts';
import { buildBatch, MemoryStorage, PartitionLog } from '../log/index.ts';
import { ProducerState } from './producer-state.ts';

const DIR = '/data/p-0';

function idemBatch(producerId: number, producerEpoch: number, baseSequence: number, n = 2): Promise<Buffer> {
  return buildBatch(
    Array.from({ length: n }, (_, i) => ({ value: `v${baseSequence + i}` })),
    { producerId, producerEpoch, baseSequence, nowMs: 1_700_000_000_000 },
  );
}

async function open(storage: MemoryStorage, fenced: Map<number, number> = new Map()) {
  const log = await PartitionLog.open(DIR, { flushPolicy: 'sync' }, { storage });
  const state = new ProducerState({ currentEpoch: (id) => fenced.get(id) });
  await state.rebuild(log, storage);
  log.setAppendGuard(state);
  return { log, state };
}

async function codeOf(p: Promise<unknown>): Promise<string | null> {
  return p.then(
    () => null,
    (e: unknown) => (isEdgeqError(e) ? e.code : String(e)),
  );
}

describe('ProducerState as the log append guard', () => {
  it('writes in-order batches and answers a retry with the original offsets, writing nothing', async () => {
    const { log } = await open(new MemoryStorage());
    const a = await log.append(await idemBatch(7, 0, 0));
    const b = await log.append(await idemBatch(7, 0, 2));
    expect([a.baseOffset, b.baseOffset]).toEqual([0, 2]);
    const retry = await log.append(await idemBatch(7, 0, 0));
    expect(retry).toMatchObject({ baseOffset: 0, lastOffset: 1, duplicate: true });
    expect(log.logEndOffset).toBe(4);
  });

  it('recognises a duplicate staged in the same write group', async () => {
    const { log } = await open(new MemoryStorage());
    const [x, y] = await Promise.all([log.append(await idemBatch(1, 0, 0)), log.append(await idemBatch(1, 0, 0))]);
    expect(x.baseOffset).toBe(0);
    expect(y).toMatchObject({ baseOffset: 0, duplicate: true });
    expect(log.logEndOffset).toBe(2);
  });

  it('refuses a sequence gap, a first batch not at 0 and an old epoch, leaving the log unchanged', async () => {
    const fenced = new Map<number, number>();
    const { log } = await open(new MemoryStorage(), fenced);
    expect(await codeOf(log.append(await idemBatch(3, 0, 5)))).toBe('OUT_OF_ORDER_SEQUENCE');
    await log.append(await idemBatch(3, 0, 0));
    expect(await codeOf(log.append(await idemBatch(3, 0, 4)))).toBe('OUT_OF_ORDER_SEQUENCE');
    // A new epoch restarts at sequence 0 and fences the old one.
    await log.append(await idemBatch(3, 1, 0));
    expect(await codeOf(log.append(await idemBatch(3, 0, 2)))).toBe('INVALID_PRODUCER_EPOCH');
    // The broker's allocator fenced epoch 1 before this partition saw epoch 2.
    fenced.set(3, 2);
    expect(await codeOf(log.append(await idemBatch(3, 1, 2)))).toBe('INVALID_PRODUCER_EPOCH');
    expect(log.logEndOffset).toBe(4);
  });

  it('refuses a batch older than the remembered window with DUPLICATE_SEQUENCE', async () => {
    const { log } = await open(new MemoryStorage());
    for (let s = 0; s < 14; s += 2) await log.append(await idemBatch(9, 0, s));
    expect(await codeOf(log.append(await idemBatch(9, 0, 0)))).toBe('DUPLICATE_SEQUENCE');
    expect((await log.append(await idemBatch(9, 0, 12))).duplicate).toBe(true);
  });

  it('leaves non-idempotent batches alone', async () => {
    const { log } = await open(new MemoryStorage());
    const b = await buildBatch([{ value: 'x' }]);
    await log.append(b);
    await log.append(await buildBatch([{ value: 'x' }]));
    expect(log.logEndOffset).toBe(2);
  });

  it('rebuilds the same state after reopening, with and without a snapshot', async () => {
    const storage = new MemoryStorage();
    const { log, state } = await open(storage);
    await log.append(await idemBatch(5, 0, 0));
    await state.snapshot(storage, DIR, log.logEndOffset);
    await log.append(await idemBatch(5, 0, 2)); // after the snapshot: found by scanning
    await log.close();

    const again = await open(storage);
    expect((await again.log.append(await idemBatch(5, 0, 2))).duplicate).toBe(true);
    expect((await again.log.append(await idemBatch(5, 0, 0))).duplicate).toBe(true);
    expect(await codeOf(again.log.append(await idemBatch(5, 0, 6)))).toBe('OUT_OF_ORDER_SEQUENCE');
    expect((await again.log.append(await idemBatch(5, 0, 4))).baseOffset).toBe(4);
    await again.log.close();
  });

  it('discards a snapshot that is ahead of the log (the log was truncated)', async () => {
    const storage = new MemoryStorage();
    const { log, state } = await open(storage);
    await log.append(await idemBatch(2, 0, 0));
    await log.append(await idemBatch(2, 0, 2));
    await state.snapshot(storage, DIR, log.logEndOffset);
    await log.truncateTo(2);
    await log.close();
    const again = await open(storage);
    // The batch at sequence 2 is gone from the log, so it is expected again, not a duplicate.
    const r = await again.log.append(await idemBatch(2, 0, 2));
    expect(r.duplicate).toBeFalsy();
    expect(r.baseOffset).toBe(2);
  });
});
