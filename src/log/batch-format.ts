/**
 * The record batch header: layout constants and a reader. The byte diagram lives in
 * docs/record-batch.md; keep the two in step.
 *
 *   0  baseOffset            int64   assigned by the log on append (outside the CRC)
 *   8  batchLength           int32   bytes after this field
 *  12  partitionLeaderEpoch  int32   set by the leader on append (outside the CRC)
 *  16  magic                 int8    format version, BATCH_MAGIC
 *  17  crc                   uint32  CRC32C of bytes [21, end)
 *  21  attributes            int16   bits 0-2 codec, bit 3 log-append time, bit 4 has origin, bit 5 traced
 *  23  lastOffsetDelta       int32
 *  27  firstTimestamp        int64
 *  35  maxTimestamp          int64
 *  43  producerId            int64   -1 when not idempotent
 *  51  producerEpoch         int16
 *  53  baseSequence          int32
 *  57  recordCount           int32
 *  61  originOffset          int64   -1 for records written in this region
 *  69  originRegionLength    uint8   0 for records written in this region
 *  70  originRegion          bytes   UTF-8
 *  70+n records …                    compressed as a whole by the codec
 */
import { EdgeqError } from '../core/errors.ts';
import { readInt64, writeInt64 } from './varint.ts';

export const BATCH_MAGIC = 2;

export const OFFSET_BASE_OFFSET = 0;
export const OFFSET_BATCH_LENGTH = 8;
export const OFFSET_LEADER_EPOCH = 12;
export const OFFSET_MAGIC = 16;
export const OFFSET_CRC = 17;
export const OFFSET_ATTRIBUTES = 21;
export const OFFSET_LAST_OFFSET_DELTA = 23;
export const OFFSET_FIRST_TIMESTAMP = 27;
export const OFFSET_MAX_TIMESTAMP = 35;
export const OFFSET_PRODUCER_ID = 43;
export const OFFSET_PRODUCER_EPOCH = 51;
export const OFFSET_BASE_SEQUENCE = 53;
export const OFFSET_RECORD_COUNT = 57;
export const OFFSET_ORIGIN_OFFSET = 61;
export const OFFSET_ORIGIN_REGION_LENGTH = 69;
export const OFFSET_ORIGIN_REGION = 70;

/** Bytes before batchLength's count starts: baseOffset + batchLength. */
export const LOG_OVERHEAD = 12;
/** Smallest legal batch: the fixed header with an empty origin region and no records. */
export const BATCH_HEADER_BYTES_MIN = OFFSET_ORIGIN_REGION;
/** Origin region names are short site names (`us-east`); the length byte allows up to this. */
export const ORIGIN_REGION_BYTES_MAX = 63;

export const ATTR_CODEC_MASK = 0x07;
export const ATTR_LOG_APPEND_TIME = 0x08;
export const ATTR_HAS_ORIGIN = 0x10;
/** Some record carries a `traceparent` header: tracing reads a batch's headers only when set (docs/tracing.md). */
export const ATTR_HAS_TRACE = 0x20;
/** The record header that carries a W3C trace context; a batch holding one gets ATTR_HAS_TRACE. */
export const TRACE_HEADER = 'traceparent';
/** Attribute bits this version defines; any other set bit makes a batch corrupt. */
export const ATTR_KNOWN_BITS = ATTR_CODEC_MASK | ATTR_LOG_APPEND_TIME | ATTR_HAS_ORIGIN | ATTR_HAS_TRACE;

/** The decoded header of one batch. */
export interface BatchHeader {
  baseOffset: number;
  /** Total bytes of the batch, header included. */
  sizeBytes: number;
  partitionLeaderEpoch: number;
  magic: number;
  crc: number;
  attributes: number;
  codec: number;
  lastOffsetDelta: number;
  firstTimestamp: number;
  maxTimestamp: number;
  producerId: number;
  producerEpoch: number;
  baseSequence: number;
  recordCount: number;
  originOffset: number;
  originRegion: string | null;
  /** Offset of the records section from the start of the batch. */
  recordsOffset: number;
}

/** Last offset of a batch whose header is `h`. */
export function lastOffsetOf(h: Pick<BatchHeader, 'baseOffset' | 'lastOffsetDelta'>): number {
  return h.baseOffset + h.lastOffsetDelta;
}

/**
 * Reads the header of the batch starting at `pos`. Checks only what is needed to read it safely
 * (lengths within `buf`, known magic); `validateBatch` checks the rest.
 */
export function readBatchHeader(buf: Buffer, pos = 0): BatchHeader {
  const available = buf.length - pos;
  if (available < BATCH_HEADER_BYTES_MIN) {
    throw new EdgeqError('CORRUPT_BATCH', `batch header needs ${BATCH_HEADER_BYTES_MIN} bytes, ${available} given`);
  }
  const batchLength = buf.readInt32BE(pos + OFFSET_BATCH_LENGTH);
  const sizeBytes = batchLength + LOG_OVERHEAD;
  if (batchLength < BATCH_HEADER_BYTES_MIN - LOG_OVERHEAD) {
    throw new EdgeqError('CORRUPT_BATCH', `batch length ${batchLength} is shorter than a header`);
  }
  if (sizeBytes > available) {
    throw new EdgeqError('CORRUPT_BATCH', `batch length ${batchLength} runs past the buffer (${available} bytes)`);
  }
  const magic = buf.readInt8(pos + OFFSET_MAGIC);
  if (magic !== BATCH_MAGIC) {
    throw new EdgeqError('CORRUPT_BATCH', `bad batch magic ${magic}, expected ${BATCH_MAGIC}`);
  }
  const originRegionLength = buf.readUInt8(pos + OFFSET_ORIGIN_REGION_LENGTH);
  const recordsOffset = OFFSET_ORIGIN_REGION + originRegionLength;
  if (originRegionLength > ORIGIN_REGION_BYTES_MAX || recordsOffset > sizeBytes) {
    throw new EdgeqError('CORRUPT_BATCH', `origin region length ${originRegionLength} is invalid`);
  }
  const attributes = buf.readInt16BE(pos + OFFSET_ATTRIBUTES);
  return {
    baseOffset: readInt64(buf, pos + OFFSET_BASE_OFFSET),
    sizeBytes,
    partitionLeaderEpoch: buf.readInt32BE(pos + OFFSET_LEADER_EPOCH),
    magic,
    crc: buf.readUInt32BE(pos + OFFSET_CRC),
    attributes,
    codec: attributes & ATTR_CODEC_MASK,
    lastOffsetDelta: buf.readInt32BE(pos + OFFSET_LAST_OFFSET_DELTA),
    firstTimestamp: readInt64(buf, pos + OFFSET_FIRST_TIMESTAMP),
    maxTimestamp: readInt64(buf, pos + OFFSET_MAX_TIMESTAMP),
    producerId: readInt64(buf, pos + OFFSET_PRODUCER_ID),
    producerEpoch: buf.readInt16BE(pos + OFFSET_PRODUCER_EPOCH),
    baseSequence: buf.readInt32BE(pos + OFFSET_BASE_SEQUENCE),
    recordCount: buf.readInt32BE(pos + OFFSET_RECORD_COUNT),
    originOffset: readInt64(buf, pos + OFFSET_ORIGIN_OFFSET),
    originRegion:
      originRegionLength === 0
        ? null
        : buf.toString('utf8', pos + OFFSET_ORIGIN_REGION, pos + OFFSET_ORIGIN_REGION + originRegionLength),
    recordsOffset,
  };
}

/** The header fields a batch writer chooses; the length comes from the buffer, the CRC after. */
export interface BatchHeaderFields {
  baseOffset: number;
  leaderEpoch: number;
  attributes: number;
  recordCount: number;
  firstTimestamp: number;
  maxTimestamp: number;
  producerId: number;
  producerEpoch: number;
  baseSequence: number;
  /** -1 without an origin. */
  originOffset: number;
  /** UTF-8 region name; empty without an origin. */
  originRegion: Buffer;
}

/**
 * Writes the header of the batch that fills `out` (its length is `out.length`), the origin
 * region included; the records follow at `OFFSET_ORIGIN_REGION + originRegion.length`. The CRC is
 * left for the caller to compute once the records are in place.
 */
export function writeBatchHeader(out: Buffer, f: BatchHeaderFields): void {
  writeInt64(out, OFFSET_BASE_OFFSET, f.baseOffset);
  out.writeInt32BE(out.length - LOG_OVERHEAD, OFFSET_BATCH_LENGTH);
  out.writeInt32BE(f.leaderEpoch, OFFSET_LEADER_EPOCH);
  out.writeInt8(BATCH_MAGIC, OFFSET_MAGIC);
  out.writeInt16BE(f.attributes, OFFSET_ATTRIBUTES);
  out.writeInt32BE(f.recordCount - 1, OFFSET_LAST_OFFSET_DELTA);
  writeInt64(out, OFFSET_FIRST_TIMESTAMP, f.firstTimestamp);
  writeInt64(out, OFFSET_MAX_TIMESTAMP, f.maxTimestamp);
  writeInt64(out, OFFSET_PRODUCER_ID, f.producerId);
  out.writeInt16BE(f.producerEpoch, OFFSET_PRODUCER_EPOCH);
  out.writeInt32BE(f.baseSequence, OFFSET_BASE_SEQUENCE);
  out.writeInt32BE(f.recordCount, OFFSET_RECORD_COUNT);
  writeInt64(out, OFFSET_ORIGIN_OFFSET, f.originOffset);
  out.writeUInt8(f.originRegion.length, OFFSET_ORIGIN_REGION_LENGTH);
  f.originRegion.copy(out, OFFSET_ORIGIN_REGION);
}

/** Total size of the batch at `pos` from its length field, without any other check. */
export function batchSizeAt(buf: Buffer, pos: number): number {
  return buf.readInt32BE(pos + OFFSET_BATCH_LENGTH) + LOG_OVERHEAD;
}

/** Overwrites the base offset (the log does this on append; it is outside the CRC). */
export function setBaseOffset(buf: Buffer, baseOffset: number, pos = 0): void {
  writeInt64(buf, pos + OFFSET_BASE_OFFSET, baseOffset);
}

/** Overwrites the leader epoch (the leader does this on append; it is outside the CRC). */
export function setLeaderEpoch(buf: Buffer, epoch: number, pos = 0): void {
  buf.writeInt32BE(epoch, pos + OFFSET_LEADER_EPOCH);
}
