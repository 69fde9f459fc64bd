/**
 * Walks the batch headers of a log from an offset to its end, in bounded reads: how the state
 * kept beside a log (producer state, origin cursors) is rebuilt from the log itself. A read may
 * start with a batch that ends before `from`; that one is skipped.
 */
import { readBatchHeader, type BatchHeader } from './batch-format.ts';
import { splitBatches } from './batch.ts';
import type { PartitionLog } from './partition-log.ts';

/** Bytes read per step (a batch larger than this still comes whole: reads return at least one). */
export const HEADER_SCAN_READ_BYTES = 4 * 1024 * 1024;

/** Calls `fn` with each batch header from `from` to the log end; returns how many it saw. */
export async function scanBatchHeaders(log: PartitionLog, from: number, fn: (h: BatchHeader) => void): Promise<number> {
  let scanned = 0;
  while (from < log.logEndOffset) {
    const r = await log.read(from, HEADER_SCAN_READ_BYTES);
    if (r.bytes.length === 0) break;
    for (const b of splitBatches(r.bytes)) {
      const h = readBatchHeader(b);
      if (h.baseOffset + h.lastOffsetDelta < from) continue;
      scanned++;
      fn(h);
    }
    from = r.nextOffset;
  }
  return scanned;
}
