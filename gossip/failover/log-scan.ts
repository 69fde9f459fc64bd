/**
 * Walks a partition's log at the local leader batch header by batch header, from an offset up to
 * a bound (or the high watermark), bounded in fetches.
 */
import { EdgeqError, isEdgeqError } from '../../src/core/index.ts';
import type { GeoCell } from './geo-cell.ts';
import { GEO_SCAN_FETCHES_MAX, GEO_SCAN_FETCH_BYTES_MAX } from './limits.ts';
import { spansOf, type BatchSpan } from './vector.ts';

/** Where a scan ended. */
export interface ScanEnd {
  /** Offset after the last record visited (or where the scan began, when it visited none). */
  scannedTo: number;
  highWatermark: number;
  logStartOffset: number;
}

/**
 * Visits the batches of the log from `from` (the log start when `from` is below it) until `to`
 * (exclusive; the high watermark when absent).
 */
export async function scanLog(cell: GeoCell, self: string, topic: string, partition: number, o: { from: number; to?: number }, visit: (spans: BatchSpan[]) => boolean | void): Promise<ScanEnd> {
  let offset = o.from;
  let hw = -1;
  let logStart = 0;
  for (let i = 0; i < GEO_SCAN_FETCHES_MAX; i++) {
    if (o.to !== undefined && offset >= o.to) return { scannedTo: offset, highWatermark: hw, logStartOffset: logStart };
    let chunk;
    try {
      chunk = await cell.read(topic, partition, offset, GEO_SCAN_FETCH_BYTES_MAX);
    } catch (err) {
      const start = isEdgeqError(err) && err.code === 'OFFSET_OUT_OF_RANGE' ? Number(err.details?.['logStartOffset']) : NaN;
      // Retention moved the log start past `offset`: what it deleted is gone, the scan goes on from there.
      if (Number.isSafeInteger(start) && start > offset) {
        offset = start;
        continue;
      }
      throw err;
    }
    hw = chunk.highWatermark;
    logStart = chunk.logStartOffset;
    if (offset < logStart) offset = logStart;
    const spans = spansOf(chunk.records, self).filter((s) => s.lastOffset >= offset && s.baseOffset < (o.to ?? hw));
    if (spans.length === 0) return { scannedTo: offset, highWatermark: hw, logStartOffset: logStart };
    const stop = visit(spans) === true;
    offset = spans[spans.length - 1]!.lastOffset + 1;
    if (stop) return { scannedTo: offset, highWatermark: hw, logStartOffset: logStart };
  }
  throw new EdgeqError('REQUEST_TIMED_OUT', `scan of ${topic}/${partition} read ${GEO_SCAN_FETCHES_MAX} fetches without reaching its end`, { details: { topic, partition, offset } });
}
