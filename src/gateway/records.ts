/**
 * Turning produce bodies (JSON, protobuf ProduceRequest, raw octets) into validated records, and
 * stored records into JSON. Everything here is pure: a body is either fully valid or refused, so a
 * refused request never reaches the producer and writes nothing.
 */
import { EdgeqError } from '../core/index.ts';
import { ATTR_HAS_ORIGIN, CompressionCodec, decodeBatch, splitBatches, validateBatchHeader, validateBatchRecords, type BatchHeader, type RecordInput } from '../log/index.ts';
import { decodeBody, type ProduceRequest } from '../protocol/index.ts';
import { isPlainObject, parseJsonObject } from './json-body.ts';

/** A record checked and ready to send; `partition` null lets the partitioner choose. */
export interface GatewayRecord {
  key: Buffer | null;
  value: Buffer | null;
  headers: Record<string, Buffer>;
  partition: number | null;
  timestamp?: number;
}

/** How values are written in JSON bodies and answers. */
export type ValueEncoding = 'utf8' | 'base64';

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

function invalid(message: string, details: Record<string, unknown> = {}): EdgeqError {
  return new EdgeqError('INVALID_ARGUMENT', message, { details });
}

/** Parses a `valueEncoding` given in a body or query; absent means utf8. */
export function parseValueEncoding(v: unknown): ValueEncoding {
  if (v === undefined || v === 'utf8') return 'utf8';
  if (v === 'base64') return 'base64';
  throw invalid(`valueEncoding must be "utf8" or "base64", got ${JSON.stringify(v)}`);
}

function decodeValue(v: unknown, encoding: ValueEncoding, i: number): Buffer | null {
  if (v === null) return null;
  if (typeof v !== 'string') throw invalid(`record ${i}: value must be a string or null`, { record: i });
  if (encoding === 'utf8') return Buffer.from(v, 'utf8');
  if (!BASE64.test(v)) throw invalid(`record ${i}: value is not valid base64`, { record: i });
  return Buffer.from(v, 'base64');
}

/** Bytes a record counts against recordBytesMax: key, value, header names and values. */
export function recordBytes(r: { key: Buffer | null; value: Buffer | null; headers: Record<string, Buffer> }): number {
  let n = (r.key?.length ?? 0) + (r.value?.length ?? 0);
  for (const [k, v] of Object.entries(r.headers)) n += Buffer.byteLength(k) + v.length;
  return n;
}

/** Parses and checks a JSON produce body (structure only; sizes and partitions are checked by `checkRecords`). */
export function parseJsonRecords(body: Buffer): GatewayRecord[] {
  const doc = parseJsonObject(body, 'body must be a JSON object with a "records" array');
  const encoding = parseValueEncoding(doc['valueEncoding']);
  const list = doc['records'];
  if (!Array.isArray(list)) throw invalid('"records" must be an array');
  return list.map((raw: unknown, i): GatewayRecord => {
    if (!isPlainObject(raw)) throw invalid(`record ${i} must be an object`, { record: i });
    if (!('value' in raw)) throw invalid(`record ${i} needs a "value" (a string or null)`, { record: i });
    const key = raw['key'];
    if (key !== undefined && key !== null && typeof key !== 'string') throw invalid(`record ${i}: key must be a string or null`, { record: i });
    const headers: Record<string, Buffer> = {};
    const rawHeaders = raw['headers'];
    if (rawHeaders !== undefined && rawHeaders !== null) {
      if (!isPlainObject(rawHeaders)) throw invalid(`record ${i}: headers must be an object of strings`, { record: i });
      for (const [k, v] of Object.entries(rawHeaders)) {
        if (typeof v !== 'string') throw invalid(`record ${i}: header "${k}" must be a string`, { record: i });
        headers[k] = Buffer.from(v, 'utf8');
      }
    }
    const partition = raw['partition'];
    // A negative partition is a malformed request (400), not an unknown partition (404).
    if (partition !== undefined && partition !== null && !(typeof partition === 'number' && Number.isSafeInteger(partition) && partition >= 0)) {
      throw invalid(`record ${i}: partition must be an integer >= 0`, { record: i });
    }
    return {
      key: typeof key === 'string' ? Buffer.from(key, 'utf8') : null,
      value: decodeValue(raw['value'], encoding, i),
      headers,
      partition: typeof partition === 'number' ? partition : null,
    };
  });
}

/** One record batch of a protobuf body: checked here, then forwarded to the cell as it is. */
export interface GatewayBatch {
  partition: number;
  /** The batch in the storage format, as the client encoded it (a view into the body). */
  bytes: Buffer;
  records: number;
  /** Its header, as `validateBatchHeader` read it (CRC checked), so the producer need not again. */
  header: BatchHeader;
  /** Bytes of its records: the sum of `recordBytes`, or the records section when that alone shows every record fits. */
  recordBytes: number;
}

/**
 * Reads a protobuf ProduceRequest for `topic`: it must name only that topic, and every batch must
 * pass the checks the broker would make (length, CRC, header) plus the gateway's own (each record
 * within `recordBytesMax`). The records are never decoded into objects: the producer forwards the
 * batches (merging uncompressed ones that queue for a partition, and stamping its producer id and
 * sequence in), which is what makes protobuf the fast way in.
 */
export async function parseProtobufBatches(body: Buffer, topic: string, o: { recordBytesMax: number; bodyBytesMax: number }): Promise<{ batches: GatewayBatch[]; acks: ProduceRequest['acks'] }> {
  const req = decodeBody<ProduceRequest>('ProduceRequest', body);
  const topics = req.topics ?? [];
  if (topics.length !== 1 || topics[0]?.name !== topic) {
    throw invalid(`the ProduceRequest must carry exactly one topic, "${topic}" (the one in the path)`, { topic });
  }
  const batches: GatewayBatch[] = [];
  for (const p of topics[0].partitions ?? []) {
    const raw = p.records ?? new Uint8Array(0);
    // A view, not a copy: the body outlives the send.
    const bytes = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
    const parts = splitBatches(bytes);
    const covered = parts.reduce((n, b) => n + b.length, 0);
    if (covered !== bytes.length) {
      throw new EdgeqError('CORRUPT_BATCH', `partition ${p.partition}: ${bytes.length - covered} bytes after the last whole batch`, { details: { partition: p.partition } });
    }
    for (const b of parts) {
      // CORRUPT_BATCH (400) on a bad length, CRC or header.
      const header = validateBatchHeader(b, { messageBytesMax: o.bodyBytesMax });
      if ((header.attributes & ATTR_HAS_ORIGIN) !== 0) {
        throw invalid(`partition ${p.partition}: batches from clients may not carry an origin region (only the mesh sets it)`, { partition: p.partition });
      }
      const sectionBytes = b.length - header.recordsOffset;
      if (header.codec === CompressionCodec.none && sectionBytes <= o.recordBytesMax) {
        // No record can be over the bound when all of them together are not: checking the framing
        // (as the broker will) is enough, without building a record object for each.
        validateBatchRecords(b, header, { messageBytesMax: o.bodyBytesMax });
        batches.push({ partition: p.partition, bytes: b, records: header.recordCount, header, recordBytes: sectionBytes });
        continue;
      }
      const { records } = await decodeBatch(b);
      let total = 0;
      records.forEach((r, i) => {
        const n = (r.key?.length ?? 0) + (r.value?.length ?? 0) + r.headers.reduce((m, h) => m + Buffer.byteLength(h.key) + (h.value?.length ?? 0), 0);
        if (n > o.recordBytesMax) {
          throw new EdgeqError('MESSAGE_TOO_LARGE', `partition ${p.partition}: record ${i} of a batch is ${n} bytes, over recordBytesMax ${o.recordBytesMax}`, {
            details: { partition: p.partition, record: i, bytes: n, recordBytesMax: o.recordBytesMax },
          });
        }
        total += n;
      });
      batches.push({ partition: p.partition, bytes: b, records: header.recordCount, header, recordBytes: total });
    }
  }
  return { batches, acks: req.acks };
}

/** Checks the count and partitions of protobuf batches before any is sent. */
export function checkBatches(batches: readonly GatewayBatch[], o: { topic: string; partitionCount: number; recordsMax: number }): void {
  const records = batches.reduce((n, b) => n + b.records, 0);
  if (records === 0) throw invalid('no records to produce');
  if (records > o.recordsMax) throw invalid(`${records} records is over recordsMax ${o.recordsMax}`, { recordsMax: o.recordsMax });
  for (const b of batches) {
    if (b.partition < 0 || b.partition >= o.partitionCount) {
      throw new EdgeqError('UNKNOWN_TOPIC_OR_PARTITION', `topic "${o.topic}" has no partition ${b.partition} (it has ${o.partitionCount})`, { details: { topic: o.topic, partition: b.partition } });
    }
  }
}

/** Checks counts, sizes and partitions of every record before any is sent. */
export function checkRecords(records: readonly GatewayRecord[], o: { topic: string; partitionCount: number; recordBytesMax: number; recordsMax: number }): void {
  if (records.length === 0) throw invalid('no records to produce');
  if (records.length > o.recordsMax) throw invalid(`${records.length} records is over recordsMax ${o.recordsMax}`, { recordsMax: o.recordsMax });
  records.forEach((r, i) => {
    const bytes = recordBytes(r);
    if (bytes > o.recordBytesMax) {
      throw new EdgeqError('MESSAGE_TOO_LARGE', `record ${i} is ${bytes} bytes, over recordBytesMax ${o.recordBytesMax}`, { details: { record: i, bytes, recordBytesMax: o.recordBytesMax } });
    }
    if (r.partition !== null && (r.partition < 0 || r.partition >= o.partitionCount)) {
      throw new EdgeqError('UNKNOWN_TOPIC_OR_PARTITION', `topic "${o.topic}" has no partition ${r.partition} (it has ${o.partitionCount})`, { details: { topic: o.topic, partition: r.partition } });
    }
  });
}

/** The producer's form of a gateway record. */
export function toRecordInput(r: GatewayRecord): RecordInput {
  return { key: r.key, value: r.value, headers: r.headers, ...(r.timestamp !== undefined ? { timestamp: r.timestamp } : {}) };
}

/** A stored record as JSON. */
export interface JsonRecord {
  offset: number;
  key: string | null;
  value: string | null;
  headers: Record<string, string>;
  timestamp: number;
  /** Global topics only: the region that wrote the record (this gateway's for its own writes). */
  originRegion?: string;
  /** Global topics only: the record's offset in its origin region's log (its own offset for own writes). */
  originOffset?: number;
}

/** A read record as the routes render it; the origin fields come from the consumer. */
export interface ReadRecord {
  offset: number;
  key: Buffer | null;
  value: Buffer | null;
  headers: readonly { key: string; value: Buffer | null }[];
  timestamp: number;
  originRegion?: string | null;
  originOffset?: number;
}

/**
 * Renders a read record (keys and header values as UTF-8, values per `encoding`). `ownRegion` is
 * set for a record of a global topic: the origin fields are added, a record written in this
 * region (no origin in its batch) showing `ownRegion` and its own offset.
 */
export function toJsonRecord(r: ReadRecord, encoding: ValueEncoding, ownRegion: string | null = null): JsonRecord {
  const headers: Record<string, string> = {};
  for (const h of r.headers) headers[h.key] = h.value?.toString('utf8') ?? '';
  const out: JsonRecord = { offset: r.offset, key: r.key?.toString('utf8') ?? null, value: r.value?.toString(encoding) ?? null, headers, timestamp: r.timestamp };
  if (ownRegion !== null) {
    const applied = r.originRegion !== null && r.originRegion !== undefined;
    out.originRegion = applied ? r.originRegion! : ownRegion;
    out.originOffset = applied ? r.originOffset! : r.offset;
  }
  return out;
}
