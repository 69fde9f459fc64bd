/**
 * Offline checks of a stopped cell's replicas: opens each broker's copy of a partition log from
 * its data folder and compares them batch by batch (offset, CRC, leader epoch).
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { FsStorage, PartitionLog, readBatchHeader, splitBatches, decodeBatches, type LogRecord } from '../../src/log/index.ts';

/** A replica's batches as `offset:crc:epoch`, with the offsets each covers, and its records. */
export interface ReplicaCopy {
  batches: string[];
  /** [baseOffset, lastOffset] of each batch, in the same order as `batches`. */
  ranges: [number, number][];
  records: LogRecord[];
}

/** `offset:crc:epoch` of every batch in the broker's replica of `topic`-`partition`. */
export async function replicaBatches(dataDir: string, topic: string, partition: number): Promise<ReplicaCopy> {
  const topicsDir = join(dataDir, 'topics');
  const entry = (await readdir(topicsDir)).find((e) => e.startsWith(`${topic}.`));
  if (!entry) return { batches: [], ranges: [], records: [] };
  const log = await PartitionLog.open(join(topicsDir, entry, String(partition)), {}, { storage: new FsStorage() });
  try {
    const batches: string[] = [];
    const ranges: [number, number][] = [];
    const records: LogRecord[] = [];
    let offset = log.logStartOffset;
    while (offset < log.logEndOffset) {
      const r = await log.read(offset, 1 << 22);
      for (const b of splitBatches(r.bytes)) {
        const h = readBatchHeader(b);
        batches.push(`${h.baseOffset}:${h.crc}:${h.partitionLeaderEpoch}`);
        ranges.push([h.baseOffset, h.baseOffset + h.lastOffsetDelta]);
      }
      records.push(...(await decodeBatches(r.bytes, offset)));
      offset = r.nextOffset;
    }
    return { batches, ranges, records };
  } finally {
    await log.close();
  }
}
