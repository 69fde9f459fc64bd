/**
 * The origin filter of a consumer fetch of a global topic: the read a replicator in another
 * region makes to copy one origin's records (issue 13).
 *
 * - The broker's own region as origin: the batches stored without an origin (written here), each
 *   copied and stamped with origin = this region, origin offset = its local base offset, so the
 *   applying region can deduplicate on them. Stored and cached bytes are never modified.
 * - Another region: the stored batches whose origin is that region, as stored (a relay).
 * - Either way, batches whose origin offsets are all at or below `afterOriginOffset` are skipped,
 *   and the scan reads at most `maxBytes` of stored batches, matching or not, reporting where it
 *   stopped (`scannedTo`) so a log full of other origins' batches never stalls the caller.
 */
import { EdgeqError } from '../core/index.ts';
import { lastOffsetOf, readBatchHeader, splitBatches, stampOrigin } from '../log/index.ts';
import type { Partition } from './partition.ts';

/** What one origin scan returned. */
export interface OriginRead {
  /** The matching batches (own ones stamped). */
  records: Buffer;
  /** Local offset after the last batch scanned: the next fetch offset. */
  scannedTo: number;
  /** Stored bytes the scan read, matching or not. */
  scannedBytes: number;
}

/**
 * Per origin region, the highest origin offset held: the origin state's cursors, and for this
 * region the last of its own offsets a consumer can read (-1 when none).
 */
export function originCursorsOf(p: Partition, region: string): Record<string, number> {
  return { ...p.origins.cursors(), [region]: p.origins.ownHead(p.highWatermark) };
}

/**
 * The local offset an origin scan starts at. A fetch offset of -1 means "find it": for this
 * region's own writes, the offset after `afterOriginOffset` (own origin offsets are local
 * offsets) clamped into [log start, HW]; for another origin, the origin state's index.
 */
export function resolveOriginStart(p: Partition, f: { topic: string; offset: number; origin: string; afterOriginOffset: number }, region: string): number {
  if (p.settings.scope !== 'global') {
    throw new EdgeqError('INVALID_REQUEST', `${f.topic} is a ${p.settings.scope} topic: an origin filter applies to global topics only`, {
      details: { topic: f.topic, partition: p.index, origin: f.origin },
    });
  }
  if (f.origin.length === 0) {
    throw new EdgeqError('INVALID_REQUEST', `${f.topic}-${p.index}: the origin filter must name a region`, { details: { topic: f.topic, partition: p.index } });
  }
  if (!Number.isSafeInteger(f.afterOriginOffset) || f.afterOriginOffset < -1) {
    throw new EdgeqError('INVALID_REQUEST', `${f.topic}-${p.index}: after_origin_offset ${f.afterOriginOffset} must be -1 or more`, {
      details: { topic: f.topic, partition: p.index, afterOriginOffset: f.afterOriginOffset },
    });
  }
  if (f.offset !== -1) return f.offset;
  if (f.origin === region) return Math.min(Math.max(f.afterOriginOffset + 1, p.logStartOffset), p.highWatermark);
  return Math.min(p.origins.locate(f.origin, f.afterOriginOffset), p.highWatermark);
}

/** Scans from `offset` (below the HW, at most `maxBytes` stored) for the batches of `origin`. */
export async function readOrigin(
  p: Partition,
  f: { offset: number; maxBytes: number; leaderEpoch: number | null | undefined; origin: string; afterOriginOffset: number },
  region: string,
): Promise<OriginRead> {
  const read = await p.read(f.offset, f.maxBytes, { leaderEpoch: f.leaderEpoch });
  const own = f.origin === region;
  const out: Buffer[] = [];
  for (const b of splitBatches(read.bytes)) {
    const h = readBatchHeader(b);
    if (own) {
      if (h.originRegion !== null || lastOffsetOf(h) <= f.afterOriginOffset) continue;
      out.push(stampOrigin(b, { region, offset: h.baseOffset }));
    } else {
      if (h.originRegion !== f.origin || h.originOffset + h.lastOffsetDelta <= f.afterOriginOffset) continue;
      out.push(b);
    }
  }
  return { records: out.length === 1 ? out[0]! : Buffer.concat(out), scannedTo: read.nextOffset, scannedBytes: read.bytes.length };
}
