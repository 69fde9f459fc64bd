/**
 * Building, validating and decoding record batches. Producers build; the log validates on append
 * and then only ever moves the bytes; consumers decode.
 */
import { EdgeqError } from '../core/errors.ts';
import {
  ATTR_CODEC_MASK,
  ATTR_HAS_ORIGIN,
  ATTR_HAS_TRACE,
  ATTR_KNOWN_BITS,
  ATTR_LOG_APPEND_TIME,
  LOG_OVERHEAD,
  OFFSET_ATTRIBUTES,
  OFFSET_BASE_SEQUENCE,
  OFFSET_BATCH_LENGTH,
  OFFSET_CRC,
  OFFSET_ORIGIN_OFFSET,
  OFFSET_ORIGIN_REGION,
  OFFSET_ORIGIN_REGION_LENGTH,
  OFFSET_PRODUCER_EPOCH,
  OFFSET_PRODUCER_ID,
  ORIGIN_REGION_BYTES_MAX,
  readBatchHeader,
  writeBatchHeader,
  type BatchHeader,
} from './batch-format.ts';
import { CompressionCodec, compress, compressionName, decompress, type CompressionId } from './compression.ts';
import { crc32c } from '../core/crc32c.ts';
import { encodeRecords, walkRecords, type LogRecord, type RecordInput } from './record.ts';
import { writeInt64 } from './varint.ts';

/** Where records applied from another region came from. */
export interface BatchOrigin {
  region: string;
  /** Offset of the batch's first record in the origin region's log. */
  offset: number;
}

/** Options for `buildBatch`. */
export interface BuildBatchOptions {
  codec?: CompressionId;
  baseOffset?: number;
  leaderEpoch?: number;
  producerId?: number;
  producerEpoch?: number;
  baseSequence?: number;
  origin?: BatchOrigin | null;
  logAppendTime?: boolean;
  /** Timestamp for records that carry none. */
  nowMs?: number;
}

/** Builds one batch holding `records`, in the storage format. */
export async function buildBatch(records: readonly RecordInput[], options: BuildBatchOptions = {}): Promise<Buffer> {
  const codec = options.codec ?? CompressionCodec.none;
  if (compressionName(codec) === undefined) throw new EdgeqError('UNSUPPORTED_COMPRESSION', `unknown codec ${codec}`);
  const encoded = encodeRecords(records, options.nowMs ?? Date.now());
  const body = await compress(codec, encoded.bytes);
  const origin = options.origin ?? null;
  const regionBytes = origin ? Buffer.from(origin.region, 'utf8') : Buffer.alloc(0);
  if (origin && (regionBytes.length === 0 || regionBytes.length > ORIGIN_REGION_BYTES_MAX)) {
    throw new EdgeqError('INVALID_ARGUMENT', `origin region must be 1..${ORIGIN_REGION_BYTES_MAX} bytes`);
  }
  const recordsOffset = OFFSET_ORIGIN_REGION + regionBytes.length;
  const out = Buffer.allocUnsafe(recordsOffset + body.length);
  let attributes: number = codec;
  if (options.logAppendTime) attributes |= ATTR_LOG_APPEND_TIME;
  if (origin) attributes |= ATTR_HAS_ORIGIN;
  if (encoded.traced) attributes |= ATTR_HAS_TRACE;
  writeBatchHeader(out, {
    baseOffset: options.baseOffset ?? 0,
    leaderEpoch: options.leaderEpoch ?? -1,
    attributes,
    recordCount: records.length,
    firstTimestamp: encoded.firstTimestamp,
    maxTimestamp: encoded.maxTimestamp,
    producerId: options.producerId ?? -1,
    producerEpoch: options.producerEpoch ?? -1,
    baseSequence: options.baseSequence ?? -1,
    originOffset: origin ? origin.offset : -1,
    originRegion: regionBytes,
  });
  body.copy(out, recordsOffset);
  recomputeCrc(out);
  return out;
}

/** Limits `validateBatch` enforces. */
export interface ValidateLimits {
  /** Largest batch accepted, header included. */
  messageBytesMax: number;
  /** Largest records section after decompression. */
  decompressedBytesMax?: number;
  /** Walk the records (decompressing when needed) to check framing and count. Default true. */
  deep?: boolean;
}

/** MESSAGE_TOO_LARGE for a batch of `sizeBytes` over `messageBytesMax`: the size part of `validateBatchHeader`. */
export function checkBatchSize(sizeBytes: number, messageBytesMax: number): void {
  if (sizeBytes > messageBytesMax) {
    throw new EdgeqError('MESSAGE_TOO_LARGE', `batch of ${sizeBytes} bytes is over ${messageBytesMax}`, { details: { sizeBytes, messageBytesMax } });
  }
}

/** Checks the header fields that need no record walk. Returns the header. */
export function validateBatchHeader(buf: Buffer, limits: ValidateLimits): BatchHeader {
  const h = readBatchHeader(buf, 0);
  if (h.sizeBytes !== buf.length) {
    throw new EdgeqError('CORRUPT_BATCH', `batch length says ${h.sizeBytes} bytes, buffer holds ${buf.length}`);
  }
  checkBatchSize(buf.length, limits.messageBytesMax);
  const crc = crc32c(buf.subarray(OFFSET_ATTRIBUTES));
  if (crc !== h.crc) throw new EdgeqError('CORRUPT_BATCH', `CRC32C mismatch: stored ${h.crc}, computed ${crc}`);
  if ((h.attributes & ~ATTR_KNOWN_BITS) !== 0) throw new EdgeqError('CORRUPT_BATCH', `unknown attribute bits ${h.attributes}`);
  if (compressionName(h.attributes & ATTR_CODEC_MASK) === undefined) {
    throw new EdgeqError('CORRUPT_BATCH', `unknown compression codec ${h.codec}`);
  }
  if (h.recordCount < 1) throw new EdgeqError('CORRUPT_BATCH', `record count ${h.recordCount} is below 1`);
  if (h.lastOffsetDelta !== h.recordCount - 1) {
    throw new EdgeqError('CORRUPT_BATCH', `record count ${h.recordCount} does not match last offset delta ${h.lastOffsetDelta}`);
  }
  if (h.firstTimestamp < 0 || h.maxTimestamp < h.firstTimestamp) {
    throw new EdgeqError('CORRUPT_BATCH', `timestamps first=${h.firstTimestamp} max=${h.maxTimestamp} are invalid`);
  }
  const hasOrigin = (h.attributes & ATTR_HAS_ORIGIN) !== 0;
  if (hasOrigin !== (h.originRegion !== null) || (hasOrigin && h.originOffset < 0)) {
    throw new EdgeqError('CORRUPT_BATCH', 'origin region and origin offset disagree with the attributes');
  }
  return h;
}

/**
 * Fully validates one batch: header, CRC, limits, and (unless `deep: false`) the record framing
 * and count, decompressing when needed. Throws CORRUPT_BATCH or MESSAGE_TOO_LARGE; never changes
 * the buffer.
 */
export async function validateBatch(buf: Buffer, limits: ValidateLimits): Promise<BatchHeader> {
  const h = validateBatchHeader(buf, limits);
  if (limits.deep !== false) await validateBatchRecords(buf, h, limits);
  return h;
}

/**
 * Walks the records of a batch whose header passed `validateBatchHeader`. Uncompressed batches are
 * checked synchronously (returns undefined, throws on failure); compressed ones return a promise,
 * since decompression runs off the event loop.
 */
export function validateBatchRecords(buf: Buffer, h: BatchHeader, limits: ValidateLimits): Promise<void> | undefined {
  const section = buf.subarray(h.recordsOffset);
  if (h.codec === CompressionCodec.none) {
    walkRecords(section, h.recordCount, h.baseOffset, h.firstTimestamp);
    return undefined;
  }
  return decompress(h.codec, section, limits.decompressedBytesMax ?? limits.messageBytesMax * 16).then((records) =>
    walkRecords(records, h.recordCount, h.baseOffset, h.firstTimestamp),
  );
}

/** Decodes every record of the batch at `pos` (which must be whole). */
export async function decodeBatch(
  buf: Buffer,
  pos = 0,
  decompressedBytesMax = 256 * 1024 * 1024,
): Promise<{ header: BatchHeader; records: LogRecord[] }> {
  const header = readBatchHeader(buf, pos);
  const section = buf.subarray(pos + header.recordsOffset, pos + header.sizeBytes);
  const plain = header.codec === CompressionCodec.none ? section : await decompress(header.codec, section, decompressedBytesMax);
  const records: LogRecord[] = [];
  const ts = (header.attributes & ATTR_LOG_APPEND_TIME) !== 0 ? header.maxTimestamp : undefined;
  walkRecords(plain, header.recordCount, header.baseOffset, header.firstTimestamp, (r) => {
    if (ts !== undefined) r.timestamp = ts;
    records.push(r);
  });
  return { header, records };
}

/**
 * Splits a buffer of consecutive batches (a fetch result) into whole batches. A trailing partial
 * batch is ignored, as a reader that asked for a byte limit may see one.
 */
export function splitBatches(buf: Buffer): Buffer[] {
  const out: Buffer[] = [];
  let p = 0;
  while (buf.length - p >= LOG_OVERHEAD) {
    const size = buf.readInt32BE(p + OFFSET_BATCH_LENGTH) + LOG_OVERHEAD;
    if (size < LOG_OVERHEAD || p + size > buf.length) break;
    out.push(buf.subarray(p, p + size));
    p += size;
  }
  return out;
}

/** Decodes every whole batch in `buf`, dropping records below `fromOffset`. */
export async function decodeBatches(buf: Buffer, fromOffset = 0): Promise<LogRecord[]> {
  const out: LogRecord[] = [];
  for (const b of splitBatches(buf)) {
    const { records } = await decodeBatch(b);
    for (const r of records) if (r.offset >= fromOffset) out.push(r);
  }
  return out;
}

/** A decoded record with where it came from: its batch's origin, or null and -1 for a batch written here. */
export interface OriginLogRecord extends LogRecord {
  originRegion: string | null;
  /** The batch's origin offset + the record's offset delta; -1 without an origin. */
  originOffset: number;
}

/** `decodeBatches` with each record's origin region and origin offset. */
export async function decodeBatchesWithOrigin(buf: Buffer, fromOffset = 0): Promise<OriginLogRecord[]> {
  const out: OriginLogRecord[] = [];
  for (const b of splitBatches(buf)) {
    const { header, records } = await decodeBatch(b);
    for (const r of records) {
      if (r.offset < fromOffset) continue;
      const originOffset = header.originRegion === null ? -1 : header.originOffset + (r.offset - header.baseOffset);
      out.push({ ...r, originRegion: header.originRegion, originOffset });
    }
  }
  return out;
}

/** Producer identity stamped into a batch: -1 everywhere for a producer without idempotence. */
export interface ProducerStamp {
  producerId: number;
  producerEpoch: number;
  baseSequence: number;
}

/**
 * A copy of an encoded batch with the producer id, epoch and base sequence replaced and the CRC
 * recomputed. A gateway forwards batches its clients built, but the idempotence fields must be
 * those of the gateway's own producer: the broker deduplicates on them.
 */
export function stampProducer(batch: Buffer, stamp: ProducerStamp): Buffer {
  return stampProducerInPlace(Buffer.from(batch), stamp);
}

/** `stampProducer` on `batch` itself, for a buffer the caller owns (a batch it merged). */
export function stampProducerInPlace(out: Buffer, stamp: ProducerStamp): Buffer {
  writeInt64(out, OFFSET_PRODUCER_ID, stamp.producerId);
  out.writeInt16BE(stamp.producerEpoch, OFFSET_PRODUCER_EPOCH);
  out.writeInt32BE(stamp.baseSequence, OFFSET_BASE_SEQUENCE);
  recomputeCrc(out);
  return out;
}

/**
 * A copy of a stored batch written in this region (no origin) tagged with `origin`: the origin
 * region bytes inserted after the fixed header, ATTR_HAS_ORIGIN set, the batch length grown by
 * them and the CRC recomputed. Everything else (offsets, epoch, producer fields, records) is kept.
 * A region serves its own writes this way to the regions that apply them, so the bytes it stores
 * (and caches) stay as they were written.
 */
export function stampOrigin(batch: Buffer, origin: BatchOrigin): Buffer {
  const h = readBatchHeader(batch, 0);
  if (h.originRegion !== null || (h.attributes & ATTR_HAS_ORIGIN) !== 0) {
    throw new EdgeqError('INVALID_ARGUMENT', `batch at offset ${h.baseOffset} already has origin ${h.originRegion ?? '?'}`);
  }
  const regionBytes = Buffer.from(origin.region, 'utf8');
  if (regionBytes.length === 0 || regionBytes.length > ORIGIN_REGION_BYTES_MAX) {
    throw new EdgeqError('INVALID_ARGUMENT', `origin region must be 1..${ORIGIN_REGION_BYTES_MAX} bytes`);
  }
  if (!Number.isSafeInteger(origin.offset) || origin.offset < 0) {
    throw new EdgeqError('INVALID_ARGUMENT', `origin offset ${origin.offset} must be a non-negative integer`);
  }
  const records = batch.subarray(h.recordsOffset, h.sizeBytes);
  const out = Buffer.allocUnsafe(OFFSET_ORIGIN_REGION + regionBytes.length + records.length);
  // The fixed header up to the origin fields is kept byte for byte; only the length, the
  // attributes and the origin fields change.
  batch.copy(out, 0, 0, OFFSET_ORIGIN_OFFSET);
  out.writeInt32BE(out.length - LOG_OVERHEAD, OFFSET_BATCH_LENGTH);
  out.writeInt16BE(h.attributes | ATTR_HAS_ORIGIN, OFFSET_ATTRIBUTES);
  writeInt64(out, OFFSET_ORIGIN_OFFSET, origin.offset);
  out.writeUInt8(regionBytes.length, OFFSET_ORIGIN_REGION_LENGTH);
  regionBytes.copy(out, OFFSET_ORIGIN_REGION);
  records.copy(out, OFFSET_ORIGIN_REGION + regionBytes.length);
  recomputeCrc(out);
  return out;
}

/** Computes the CRC of `batch` in place: after building it, or after its covered bytes changed. */
export function recomputeCrc(batch: Buffer): void {
  batch.writeUInt32BE(crc32c(batch.subarray(OFFSET_ATTRIBUTES)), OFFSET_CRC);
}
