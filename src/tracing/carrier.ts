/**
 * The W3C trace context in record headers: written by the producing gateway as a `traceparent`
 * header, read back by the brokers, the exchange and the consumers. A batch holding such a record
 * has ATTR_HAS_TRACE set by the batch builder, so a reader looks at the attributes (two bytes it
 * already has) and decodes the records of traced batches only.
 */
import type { SpanContext } from '@opentelemetry/api';
import {
  ATTR_HAS_TRACE,
  CompressionCodec,
  LOG_OVERHEAD,
  OFFSET_ATTRIBUTES,
  OFFSET_BATCH_LENGTH,
  OFFSET_RECORD_COUNT,
  TRACE_HEADER,
  decompress,
  readBatchHeader,
  readVarint,
  splitBatches,
  type BatchHeader,
  type RecordHeader,
  type VarintRead,
} from '../log/index.ts';

export { TRACE_HEADER };

/**
 * Distinct trace contexts followed in one produce, fetch or apply of a partition: each gets its
 * own span, so a batch merging many traced requests costs at most this many spans (1% sampling
 * of 1,000 requests merged into a batch is ~10).
 */
export const TRACE_CONTEXTS_PER_BATCH_MAX = 32;

/** W3C trace-flags bit: the producer recorded the span. */
const FLAG_SAMPLED = 0x01;
/** Longest traceparent looked at (a later version may append fields; nothing sane is longer). */
const TRACEPARENT_CHARS_MAX = 512;
const HEX = /^[0-9a-f]+$/;

/**
 * The `traceparent` value of a span context (W3C Trace Context, version 00). Written and parsed
 * here rather than through the SDK's propagator: the hooks that call this load no OpenTelemetry
 * code at all while tracing is off.
 */
export function formatTraceparent(sc: SpanContext): string {
  return `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

/** The remote span context in a `traceparent` value; null when absent or malformed (a bad header is ignored, never an error). */
export function parseTraceparent(value: string | Buffer | null | undefined): SpanContext | null {
  if (value === null || value === undefined) return null;
  const text = typeof value === 'string' ? value.trim() : value.toString('latin1').trim();
  // version(2)-traceId(32)-spanId(16)-flags(2): 55 characters; version 00 is exactly that, a
  // later version may append "-…" fields, version ff is invalid.
  if (text.length < 55 || text.length > TRACEPARENT_CHARS_MAX) return null;
  const version = text.slice(0, 2);
  if (!HEX.test(version) || version === 'ff' || (version === '00' && text.length !== 55) || (text.length > 55 && text[55] !== '-')) return null;
  if (text[2] !== '-' || text[35] !== '-' || text[52] !== '-') return null;
  const traceId = text.slice(3, 35);
  const spanId = text.slice(36, 52);
  const flags = text.slice(53, 55);
  if (!HEX.test(traceId) || !HEX.test(spanId) || !HEX.test(flags) || /^0+$/.test(traceId) || /^0+$/.test(spanId)) return null;
  return { traceId, spanId, traceFlags: parseInt(flags, 16), isRemote: true };
}

/** True when the record context was sampled by its producer: only those are followed. */
export function sampled(sc: SpanContext): boolean {
  return (sc.traceFlags & FLAG_SAMPLED) !== 0;
}

/**
 * `records` with the `traceparent` of `sc` added to each one's headers (copies; the inputs are
 * not changed). A record that already carries one keeps it: a producer's own context is the
 * record's creation context.
 */
export function injectRecords<R extends { headers: Record<string, Buffer> }>(records: readonly R[], sc: SpanContext): R[] {
  const value = Buffer.from(formatTraceparent(sc), 'latin1');
  return records.map((r) => (TRACE_HEADER in r.headers ? r : { ...r, headers: { ...r.headers, [TRACE_HEADER]: value } }));
}

/** The sampled creation context of a record read back; null for none. */
export function recordContext(headers: readonly RecordHeader[]): SpanContext | null {
  for (const h of headers) {
    if (h.key !== TRACE_HEADER) continue;
    const sc = parseTraceparent(h.value);
    return sc && sampled(sc) ? sc : null;
  }
  return null;
}

/** True when some batch in `bytes` (whole batches, back to back) has ATTR_HAS_TRACE. Reads two bytes per batch. */
export function anyBatchTraced(bytes: Uint8Array): boolean {
  if (bytes.length === 0 || !(bytes instanceof Uint8Array)) return false;
  const buf = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let p = 0;
  while (buf.length - p > OFFSET_ATTRIBUTES + 2) {
    if ((buf.readInt16BE(p + OFFSET_ATTRIBUTES) & ATTR_HAS_TRACE) !== 0) return true;
    const length = buf.readInt32BE(p + OFFSET_BATCH_LENGTH);
    if (length <= 0) return false; // corrupt: the log refuses it; never loop on it
    p += LOG_OVERHEAD + length;
  }
  return false;
}

/** The records of one creation context within the batches of one operation. */
export interface TracedRecords {
  context: SpanContext;
  /** Records carrying it. */
  count: number;
  /** Position of its first record among all records of the operation (0-based). */
  index: number;
  /** Its first record's offset as stored in the batch (0-based before the leader assigns offsets). */
  offset: number;
  /** For records applied from another region: their origin and the first one's offset there. */
  originRegion: string | null;
  originOffset: number | null;
}

/** TRACE_HEADER's bytes, compared in place with the header keys of a traced batch's records. */
const TRACE_HEADER_BYTES = Buffer.from(TRACE_HEADER, 'latin1');
/** Bound on a traced batch's decompressed records (as the log's own decode bounds it). */
const DECOMPRESSED_BYTES_MAX = 256 * 1024 * 1024;

/**
 * The sampled creation contexts in traced batches of `bytes`, first appearance first, at most
 * TRACE_CONTEXTS_PER_BATCH_MAX (`dropped` counts the rest). Untraced batches are skipped without
 * being read; a traced one is walked in place, looking only at its records' header keys (no
 * record objects: at 1% sampling this runs on a few batches a second, too rarely to stay
 * compiled or cached, so it does as little as it can). A compressed traced batch is decompressed
 * first; a batch that does not walk is skipped (the log refuses it on its own).
 */
export async function tracedRecords(bytes: Uint8Array): Promise<{ traced: TracedRecords[]; dropped: number }> {
  if (bytes.length === 0 || !(bytes instanceof Uint8Array)) return { traced: [], dropped: 0 };
  const buf = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const scan: ContextScan = { byParent: new Map(), dropped: 0, index: 0 };
  for (const b of splitBatches(buf)) {
    const count = b.readInt32BE(OFFSET_RECORD_COUNT);
    if ((b.readInt16BE(OFFSET_ATTRIBUTES) & ATTR_HAS_TRACE) === 0) {
      scan.index += count;
      continue;
    }
    const start = scan.index;
    try {
      const header = readBatchHeader(b);
      const section = b.subarray(header.recordsOffset, header.sizeBytes);
      const plain = header.codec === CompressionCodec.none ? section : await decompress(header.codec, section, DECOMPRESSED_BYTES_MAX);
      scanRecords(plain, header, scan);
    } catch {
      // not walkable: skipped, its records still counted
    }
    scan.index = start + count;
  }
  return { traced: [...scan.byParent.values()], dropped: scan.dropped };
}

interface ContextScan {
  byParent: Map<string, TracedRecords>;
  dropped: number;
  /** Position of the next record among all records of the operation. */
  index: number;
}

/** Walks one batch's records (uncompressed) for `traceparent` headers; throws CORRUPT_BATCH on a record that does not parse. */
function scanRecords(plain: Buffer, header: BatchHeader, scan: ContextScan): void {
  const v: VarintRead = { value: 0, next: 0 };
  const len = plain.length;
  let p = 0;
  for (let i = 0; i < header.recordCount && p < len; i++, scan.index++) {
    readVarint(plain, p, len, v);
    const end = v.next + v.value;
    if (v.value < 1 || end > len) return;
    readVarint(plain, v.next + 1, end, v); // timestamp delta, after the attributes byte
    readVarint(plain, v.next, end, v); // offset delta
    const offsetDelta = v.value;
    readVarint(plain, v.next, end, v); // key
    readVarint(plain, v.next + Math.max(0, v.value), end, v); // value
    readVarint(plain, v.next + Math.max(0, v.value), end, v); // header count
    const headers = v.value;
    let q = v.next;
    for (let h = 0; h < headers && q < end; h++) {
      readVarint(plain, q, end, v);
      const keyStart = v.next;
      const keyLen = v.value;
      readVarint(plain, keyStart + Math.max(0, keyLen), end, v);
      const valueStart = v.next;
      const valueLen = v.value;
      q = valueStart + Math.max(0, valueLen);
      if (keyLen !== TRACE_HEADER_BYTES.length || valueLen < 0 || q > end || !isTraceKey(plain, keyStart)) continue;
      const sc = parseTraceparent(plain.toString('latin1', valueStart, q));
      if (sc !== null && sampled(sc)) note(scan, sc, header, offsetDelta);
      break; // the first traceparent is the record's, as recordContext reads it
    }
    p = end;
  }
}

function isTraceKey(buf: Buffer, at: number): boolean {
  for (let k = 0; k < TRACE_HEADER_BYTES.length; k++) if (buf[at + k] !== TRACE_HEADER_BYTES[k]) return false;
  return true;
}

function note(scan: ContextScan, sc: SpanContext, header: BatchHeader, offsetDelta: number): void {
  const key = `${sc.traceId}-${sc.spanId}`;
  const seen = scan.byParent.get(key);
  if (seen) seen.count++;
  else if (scan.byParent.size >= TRACE_CONTEXTS_PER_BATCH_MAX) scan.dropped++;
  else {
    scan.byParent.set(key, {
      context: sc,
      count: 1,
      index: scan.index,
      offset: header.baseOffset + offsetDelta,
      originRegion: header.originRegion,
      originOffset: header.originRegion !== null ? header.originOffset + offsetDelta : null,
    });
  }
}
