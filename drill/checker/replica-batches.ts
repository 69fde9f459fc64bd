/**
 * Reads one replica's batches of a partition straight from a broker's data folder, for the
 * checker's "no offset holds two different batches across replicas" (issue 16). The broker may be
 * running: files are opened read-only, each segment is read up to the size it had when opened, and
 * only whole batches are listed (a batch still being written is a torn tail, where the walk stops).
 *
 * Layout (src/broker/topic-store.ts): `topics.json` names each topic's id, and its partition logs
 * live in `topics/<name>.<id>/<partition>/` as `<20-digit base offset>.log` segments
 * (src/log/segment.ts). The CRC listed is computed from the bytes as stored, so a flipped bit shows
 * as a different CRC even where the stored checksum field was left intact.
 */
import { open, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32c, EdgeqError } from '../../src/core/index.ts';
import {
  BATCH_HEADER_BYTES_MIN,
  BATCH_MAGIC,
  LOG_OVERHEAD,
  OFFSET_ATTRIBUTES,
  OFFSET_BATCH_LENGTH,
  OFFSET_CRC,
  OFFSET_LAST_OFFSET_DELTA,
  OFFSET_MAGIC,
  OFFSET_RECORD_COUNT,
  parseSegmentName,
  readInt64,
  segmentStem,
} from '../../src/log/index.ts';
import type { ReplicaBatches } from '../types.ts';

/** The broker's topic metadata file and log folder (kept in step with src/broker/topic-store.ts). */
export const BROKER_TOPICS_FILE = 'topics.json';
export const BROKER_TOPICS_DIR = 'topics';
/** Bytes read per call: a batch of any size is walked and checksummed with this much memory. */
export const REPLICA_READ_CHUNK_BYTES = 1024 * 1024;
/** Batches listed per replica at most (a drill's partition holds far fewer; 10^6 × 24 B ≈ 24 MB). */
export const REPLICA_BATCHES_MAX = 1_000_000;
/** Header bytes needed to place a batch (through recordCount). */
const HEADER_BYTES = OFFSET_RECORD_COUNT + 4;

export interface ReadReplicaOptions {
  readonly region: string;
  readonly broker: string;
  /** Batches starting at or above it are not listed (consumers do not see them). */
  readonly highWatermark: number;
}

/** One listed batch; `corrupt` when its stored CRC32C does not match its bytes. */
export interface ListedBatch {
  readonly baseOffset: number;
  readonly lastOffset: number;
  readonly crc: number;
  readonly corrupt?: boolean;
}

/** Lists the batches of `topic`-`partition` held in the broker data folder `dataDir`, below the high watermark. */
export async function readReplicaBatches(
  dataDir: string,
  topic: string,
  partition: number,
  options: ReadReplicaOptions,
): Promise<ReplicaBatches> {
  if (!Number.isSafeInteger(partition) || partition < 0) {
    throw new EdgeqError('INVALID_ARGUMENT', `partition ${String(partition)} is not a non-negative integer`, { details: { partition } });
  }
  if (!Number.isSafeInteger(options.highWatermark) || options.highWatermark < 0) {
    throw new EdgeqError('INVALID_ARGUMENT', `highWatermark ${String(options.highWatermark)} is not a non-negative integer`, {
      details: { highWatermark: options.highWatermark },
    });
  }
  const dir = await partitionDir(dataDir, topic, partition);
  const bases = (await readdir(dir))
    .map(parseSegmentName)
    .filter((b): b is number => b !== null)
    .sort((a, b) => a - b);
  const batches: ListedBatch[] = [];
  for (const base of bases) {
    if (base >= options.highWatermark) break;
    const done = await readSegment(join(dir, `${segmentStem(base)}.log`), base, options.highWatermark, batches);
    if (done) break;
  }
  return { region: options.region, broker: options.broker, topic, partition, batches, highWatermark: options.highWatermark };
}

/** The partition's folder, from the broker's own topics.json (the id tells a re-created topic apart). */
async function partitionDir(dataDir: string, topic: string, partition: number): Promise<string> {
  const path = join(dataDir, BROKER_TOPICS_FILE);
  let parsed: { topics?: { name?: unknown; id?: unknown; partitions?: unknown }[] };
  try {
    parsed = JSON.parse((await readFile(path)).toString('utf8')) as typeof parsed;
  } catch (err) {
    throw new EdgeqError('INVALID_DATA', `${path} cannot be read as a broker's topics file`, { cause: err, details: { dataDir } });
  }
  const t = (parsed.topics ?? []).find((x) => x.name === topic);
  if (!t || typeof t.id !== 'string') {
    throw new EdgeqError('INVALID_ARGUMENT', `topic ${topic} is not in ${path}`, { details: { topic, dataDir } });
  }
  if (typeof t.partitions === 'number' && partition >= t.partitions) {
    throw new EdgeqError('INVALID_ARGUMENT', `partition ${partition} of ${topic} does not exist (${t.partitions} partitions)`, {
      details: { topic, partition },
    });
  }
  return join(dataDir, BROKER_TOPICS_DIR, `${topic}.${t.id}`, String(partition));
}

/**
 * Appends the whole batches of one segment below `highWatermark` to `out`. Returns true when the
 * walk must end here (the high watermark was reached, or the segment ends in something that is not
 * a whole batch, which only the last segment may); a segment that vanished (retention) is skipped.
 */
async function readSegment(path: string, base: number, highWatermark: number, out: ListedBatch[]): Promise<boolean> {
  let fh;
  try {
    fh = await open(path, 'r');
  } catch (err) {
    if ((err as { code?: string }).code === 'ENOENT') return false;
    throw err;
  }
  try {
    // The size seen now bounds the walk: bytes appended later belong to batches above any HWM given.
    const end = (await fh.stat()).size;
    const chunk = Buffer.allocUnsafe(REPLICA_READ_CHUNK_BYTES);
    const read = async (at: number, len: number): Promise<Buffer | null> => {
      const { bytesRead } = await fh.read(chunk, 0, len, at);
      return bytesRead === len ? chunk.subarray(0, len) : null;
    };
    let pos = 0;
    let expected = base;
    while (pos < end) {
      if (end - pos < BATCH_HEADER_BYTES_MIN) return true;
      const h = await read(pos, HEADER_BYTES);
      if (!h) return true;
      const sizeBytes = h.readInt32BE(OFFSET_BATCH_LENGTH) + LOG_OVERHEAD;
      if (sizeBytes < BATCH_HEADER_BYTES_MIN || pos + sizeBytes > end) return true;
      if (h.readInt8(OFFSET_MAGIC) !== BATCH_MAGIC) return true;
      const baseOffset = readInt64(h, 0);
      const lastOffsetDelta = h.readInt32BE(OFFSET_LAST_OFFSET_DELTA);
      // Offsets are contiguous in a log; past a break nothing after it can be placed with trust.
      if (baseOffset !== expected || lastOffsetDelta < 0 || h.readInt32BE(OFFSET_RECORD_COUNT) !== lastOffsetDelta + 1) return true;
      if (baseOffset >= highWatermark) return true;
      const stored = h.readUInt32BE(OFFSET_CRC);
      let crc = 0;
      for (let at = pos + OFFSET_ATTRIBUTES; at < pos + sizeBytes; ) {
        const n = Math.min(REPLICA_READ_CHUNK_BYTES, pos + sizeBytes - at);
        const body = await read(at, n);
        if (!body) return true;
        crc = crc32c(body, crc);
        at += n;
      }
      if (out.length >= REPLICA_BATCHES_MAX) {
        throw new EdgeqError('INVALID_DATA', `${path}: more than ${REPLICA_BATCHES_MAX} batches below the high watermark`, { details: { path } });
      }
      const batch: ListedBatch = { baseOffset, lastOffset: baseOffset + lastOffsetDelta, crc };
      out.push(crc === stored ? batch : { ...batch, corrupt: true });
      expected = baseOffset + lastOffsetDelta + 1;
      pos += sizeBytes;
    }
    return false;
  } finally {
    await fh.close();
  }
}
