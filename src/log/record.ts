/**
 * Records as users see them, and their varint-framed encoding inside a batch (Kafka's v2 record
 * layout):
 *
 *   length          varint  bytes of the rest of this record
 *   attributes      int8    0 (reserved)
 *   timestampDelta  varint  from the batch's firstTimestamp
 *   offsetDelta     varint  from the batch's baseOffset; equals the record's index
 *   keyLength       varint  -1 for a null key
 *   key             bytes
 *   valueLength     varint  -1 for a null value
 *   value           bytes
 *   headerCount     varint
 *     headerKeyLength varint, headerKey (UTF-8), headerValueLength varint (-1 null), headerValue
 */
import { EdgeqError } from '../core/errors.ts';
import { readVarint, varintSize, writeVarint, type VarintRead } from './varint.ts';
import { TRACE_HEADER } from './batch-format.ts';

/** One header of a record. */
export interface RecordHeader {
  key: string;
  value: Buffer | null;
}

/** A record handed to a batch builder. Strings are encoded as UTF-8. */
export interface RecordInput {
  key?: Buffer | string | null;
  value: Buffer | string | null;
  headers?: RecordHeader[] | Record<string, string | Buffer>;
  /** Create time in ms since the epoch; the builder's `nowMs` when absent. */
  timestamp?: number;
}

/** A record read back from a batch. */
export interface LogRecord {
  offset: number;
  timestamp: number;
  key: Buffer | null;
  value: Buffer | null;
  headers: RecordHeader[];
}

function toBuffer(v: Buffer | string | null | undefined): Buffer | null {
  if (v === null || v === undefined) return null;
  return typeof v === 'string' ? Buffer.from(v, 'utf8') : v;
}

function normaliseHeaders(h: RecordInput['headers']): { key: Buffer; value: Buffer | null }[] {
  if (h === undefined) return [];
  const pairs: [string, Buffer | string | null][] = Array.isArray(h)
    ? h.map((x) => [x.key, x.value])
    : Object.entries(h);
  return pairs.map(([k, v]) => ({ key: Buffer.from(k, 'utf8'), value: toBuffer(v) }));
}

interface PreparedRecord {
  tsDelta: number;
  key: Buffer | null;
  value: Buffer | null;
  headers: { key: Buffer; value: Buffer | null }[];
  bodyBytes: number;
}

function bytesField(b: Buffer | null): number {
  return b === null ? varintSize(-1) : varintSize(b.length) + b.length;
}

/**
 * Encodes records into the uncompressed records section. Returns the bytes and the first and
 * max timestamps.
 */
export function encodeRecords(
  records: readonly RecordInput[],
  nowMs: number,
): { bytes: Buffer; firstTimestamp: number; maxTimestamp: number; traced: boolean } {
  if (records.length === 0) throw new EdgeqError('INVALID_ARGUMENT', 'a batch needs at least one record');
  const firstTimestamp = records[0]!.timestamp ?? nowMs;
  let maxTimestamp = firstTimestamp;
  const prepared: PreparedRecord[] = new Array(records.length);
  let total = 0;
  let traced = false;
  for (let i = 0; i < records.length; i++) {
    const r = records[i]!;
    const ts = r.timestamp ?? nowMs;
    if (!Number.isSafeInteger(ts) || ts < 0) throw new EdgeqError('INVALID_ARGUMENT', `record ${i} has a bad timestamp`);
    if (ts > maxTimestamp) maxTimestamp = ts;
    const key = toBuffer(r.key);
    const value = toBuffer(r.value);
    const headers = normaliseHeaders(r.headers);
    let bodyBytes = 1 + varintSize(ts - firstTimestamp) + varintSize(i) + bytesField(key) + bytesField(value);
    bodyBytes += varintSize(headers.length);
    for (const h of headers) bodyBytes += bytesField(h.key) + bytesField(h.value);
    if (headers.length > 0 && !traced) traced = hasTraceHeader(r.headers);
    prepared[i] = { tsDelta: ts - firstTimestamp, key, value, headers, bodyBytes };
    total += varintSize(bodyBytes) + bodyBytes;
  }
  const out = Buffer.allocUnsafe(total);
  let p = 0;
  for (let i = 0; i < prepared.length; i++) {
    const r = prepared[i]!;
    p = writeVarint(out, p, r.bodyBytes);
    out[p++] = 0;
    p = writeVarint(out, p, r.tsDelta);
    p = writeVarint(out, p, i);
    p = writeBytesField(out, p, r.key);
    p = writeBytesField(out, p, r.value);
    p = writeVarint(out, p, r.headers.length);
    for (const h of r.headers) {
      p = writeBytesField(out, p, h.key);
      p = writeBytesField(out, p, h.value);
    }
  }
  return { bytes: out, firstTimestamp, maxTimestamp, traced };
}

/** True when the headers hold a `traceparent` (the batch then gets ATTR_HAS_TRACE). */
function hasTraceHeader(h: RecordInput['headers']): boolean {
  if (Array.isArray(h)) return h.some((x) => x.key === TRACE_HEADER);
  return h !== undefined && TRACE_HEADER in h;
}

function writeBytesField(out: Buffer, p: number, b: Buffer | null): number {
  if (b === null) return writeVarint(out, p, -1);
  p = writeVarint(out, p, b.length);
  b.copy(out, p);
  return p + b.length;
}

/**
 * Steps over a bytes field (length varint, then the bytes), checking it fits before `end`.
 * Returns its length, -1 for a null field; the bytes end at `v.next`. Reading steps over fields
 * and builds views only when someone reads them: a walk that only checks builds nothing.
 */
function skipBytesField(buf: Buffer, v: VarintRead, end: number, what: string): number {
  readVarint(buf, v.next, end, v);
  const len = v.value;
  if (len === -1) return -1;
  if (len < -1 || v.next + len > end) throw new EdgeqError('CORRUPT_BATCH', `${what} length ${len} runs past the record`);
  v.next += len;
  return len;
}

/** Headers of records walked without a visitor (never filled). */
const NO_HEADERS: RecordHeader[] = [];

/** The field `skipBytesField` just stepped over: a view, or null for a null field. */
function fieldView(buf: Buffer, v: VarintRead, len: number): Buffer | null {
  return len < 0 ? null : buf.subarray(v.next - len, v.next);
}

/**
 * Walks the records section and checks its framing: every record's length fits, the count is
 * `expectedCount`, each offset delta equals the record's index and nothing trails the last record.
 * Calls `visit` with each decoded record when given (keys and values are views, not copies).
 */
export function walkRecords(
  records: Buffer,
  expectedCount: number,
  baseOffset: number,
  firstTimestamp: number,
  visit?: (r: LogRecord) => void,
): void {
  const v: VarintRead = { value: 0, next: 0 };
  let p = 0;
  let i = 0;
  while (p < records.length) {
    if (i >= expectedCount) throw new EdgeqError('CORRUPT_BATCH', `more records than the count ${expectedCount}`);
    readVarint(records, p, records.length, v);
    const bodyBytes = v.value;
    const end = v.next + bodyBytes;
    if (bodyBytes < 1 || end > records.length) throw new EdgeqError('CORRUPT_BATCH', `record ${i} length ${bodyBytes} is invalid`);
    v.next += 1; // attributes
    readVarint(records, v.next, end, v);
    const tsDelta = v.value;
    readVarint(records, v.next, end, v);
    if (v.value !== i) throw new EdgeqError('CORRUPT_BATCH', `record ${i} has offset delta ${v.value}`);
    // Views and header objects only for a visitor: every append and every gateway request
    // walks records just to check them.
    const keyLen = skipBytesField(records, v, end, 'key');
    const key = visit ? fieldView(records, v, keyLen) : null;
    const valueLen = skipBytesField(records, v, end, 'value');
    const value = visit ? fieldView(records, v, valueLen) : null;
    readVarint(records, v.next, end, v);
    const headerCount = v.value;
    if (headerCount < 0 || headerCount > bodyBytes) throw new EdgeqError('CORRUPT_BATCH', `record ${i} header count ${headerCount}`);
    const headers: RecordHeader[] = visit ? [] : NO_HEADERS;
    for (let h = 0; h < headerCount; h++) {
      const hkLen = skipBytesField(records, v, end, 'header key');
      if (hkLen < 0) throw new EdgeqError('CORRUPT_BATCH', `record ${i} has a null header key`);
      const hkEnd = v.next;
      const hvLen = skipBytesField(records, v, end, 'header value');
      if (visit) headers.push({ key: records.toString('utf8', hkEnd - hkLen, hkEnd), value: fieldView(records, v, hvLen) });
    }
    if (v.next !== end) throw new EdgeqError('CORRUPT_BATCH', `record ${i} has ${end - v.next} trailing bytes`);
    visit?.({ offset: baseOffset + i, timestamp: firstTimestamp + tsDelta, key, value, headers });
    p = end;
    i++;
  }
  if (i !== expectedCount) throw new EdgeqError('CORRUPT_BATCH', `record count says ${expectedCount}, batch holds ${i}`);
}
