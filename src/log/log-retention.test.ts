// Proves that what truncation and reset remove stays removed across a power loss (the power-loss
// storage discards every write and truncation that was not fdatasync'd): a replica that cut a
// divergent tail or reset to its leader's log start never gets the old batches back.
import { describe, expect, it } from 'vitest';
import { buildBatch, decodeBatches } from './batch.ts';
import { MemoryStorage } from './memory-storage.ts';
import { PartitionLog } from './partition-log.ts';
import { PowerLossStorage } from './power-loss-storage.ts';

const DIR = '/data/retention-0';
/** Two ~220-byte batches fill a 500-byte segment. */
const CONFIG = { segmentBytesMax: 500, messageBytesMax: 500, flushPolicy: 'sync' as const, tailCacheBytesMax: 0 };

async function filled(): Promise<{ storage: PowerLossStorage; log: PartitionLog }> {
  const storage = new PowerLossStorage(new MemoryStorage());
  const log = await PartitionLog.open(DIR, CONFIG, { storage });
  for (let i = 0; i < 6; i++) await log.append(await buildBatch([{ value: `r${i}`.padEnd(150, '~') }]));
  expect(log.segmentCount).toBe(3);
  return { storage, log };
}

async function values(log: PartitionLog): Promise<string[]> {
  const out: string[] = [];
  for (let offset = log.logStartOffset; offset < log.logEndOffset; ) {
    const r = await log.read(offset, 1 << 16);
    out.push(...(await decodeBatches(r.bytes, offset)).map((x) => x.value!.toString().slice(0, 2)));
    offset = r.nextOffset;
  }
  return out;
}

describe('truncation and reset across a power loss', () => {
  it('a reset to the base of an existing segment stays empty', async () => {
    const { storage, log } = await filled();
    const base = log.segmentBaseOffsets()[2]!;
    await log.resetTo(base);
    const after = await storage.crash();
    await log.abort();
    const again = await PartitionLog.open(DIR, CONFIG, { storage: after });
    expect([again.logStartOffset, again.logEndOffset]).toEqual([base, base]);
    expect(again.recovery.corruptSegments).toEqual([]);
    await again.close();
  });

  it('a reset past the end stays empty', async () => {
    const { storage, log } = await filled();
    await log.resetTo(100);
    const after = await storage.crash();
    await log.abort();
    const again = await PartitionLog.open(DIR, CONFIG, { storage: after });
    expect([again.logStartOffset, again.logEndOffset]).toEqual([100, 100]);
    await again.close();
  });

  it('a truncation across segments keeps only the prefix', async () => {
    const { storage, log } = await filled();
    await log.truncateTo(3);
    const after = await storage.crash();
    await log.abort();
    const again = await PartitionLog.open(DIR, CONFIG, { storage: after });
    expect(await values(again)).toEqual(['r0', 'r1', 'r2']);
    expect(again.recovery.corruptSegments).toEqual([]);
    await again.close();
  });
});
