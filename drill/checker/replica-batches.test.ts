// Proves that a replica's batches are read back from a real broker data folder (topics.json and
// segment logs written by the broker's own TopicManager over the file system) with the CRC of each,
// that a flipped byte changes exactly one CRC, that a torn tail ends the listing cleanly, and that
// bad input is refused with a typed error.
import { afterAll, describe, expect, it } from 'vitest';
import { readdir, readFile, truncate, writeFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { FakeClock, isEdgeqError } from '../../src/core/index.ts';
import { buildBatch, FilePool, FsStorage, readBatchHeader } from '../../src/log/index.ts';
import { TopicManager } from '../../src/broker/index.ts';
import { cleanupTempDirs, tempDir } from '../../src/testing/index.ts';
import { readReplicaBatches } from './replica-batches.ts';

afterAll(cleanupTempDirs);

const TOPIC = 'drill-g';
/** Small segments, so the listing crosses segment files. */
const SEGMENT_BYTES = 600;

/** A broker data folder holding `batches` batches of 3 records in partition 1 of a 2-partition topic. */
async function brokerDir(batches: number): Promise<{ dataDir: string; partDir: string; crcs: number[] }> {
  const dataDir = await tempDir('edgeq-replica-');
  const storage = new FsStorage();
  const topics = await TopicManager.open({
    storage,
    dataDir,
    filePool: new FilePool(storage, 16),
    producerIds: { init: async () => ({ producerId: 0, producerEpoch: 0 }), currentEpoch: () => undefined },
    logDefaults: { segmentBytesMax: SEGMENT_BYTES, messageBytesMax: SEGMENT_BYTES, flushPolicy: 'sync' },
    brokerCount: 1,
    retentionCheckIntervalMs: 1_000_000,
    brokerId: 1,
    clock: new FakeClock(),
  });
  await topics.create({ name: TOPIC, partitions: 2 });
  const log = topics.partition(TOPIC, 1).log;
  const crcs: number[] = [];
  for (let i = 0; i < batches; i++) {
    const b = await buildBatch([{ value: `v${i}-a` }, { value: `v${i}-b` }, { value: `v${i}-c` }], { nowMs: 1_700_000_000_000 });
    crcs.push(readBatchHeader(b).crc);
    await log.append(b);
  }
  const partDir = log.dir;
  await topics.close();
  return { dataDir, partDir, crcs };
}

async function segmentFiles(dir: string): Promise<string[]> {
  return (await readdir(dir)).filter((n) => n.endsWith('.log')).sort();
}

async function codeOf(p: Promise<unknown>): Promise<string | null> {
  const err = await p.then(() => null, (e: unknown) => e);
  return isEdgeqError(err) ? err.code : String(err);
}

describe('readReplicaBatches', () => {
  it('lists every batch below the high watermark across segments, with its CRC', async () => {
    const { dataDir, partDir, crcs } = await brokerDir(10);
    expect((await segmentFiles(partDir)).length).toBeGreaterThan(1);
    const r = await readReplicaBatches(dataDir, TOPIC, 1, { region: 'eu', broker: 'b1', highWatermark: 30 });
    expect(r).toMatchObject({ region: 'eu', broker: 'b1', topic: TOPIC, partition: 1, highWatermark: 30 });
    expect(r.batches.map((b) => [b.baseOffset, b.lastOffset])).toEqual(crcs.map((_, i) => [3 * i, 3 * i + 2]));
    expect(r.batches.map((b) => b.crc)).toEqual(crcs);
    expect(r.batches.some((b) => b.corrupt)).toBe(false);

    // Up to the high watermark only: batches starting at or above it are not visible.
    const low = await readReplicaBatches(dataDir, TOPIC, 1, { region: 'eu', broker: 'b1', highWatermark: 7 });
    expect(low.batches.map((b) => b.baseOffset)).toEqual([0, 3, 6]);
    // The other partition is empty.
    expect((await readReplicaBatches(dataDir, TOPIC, 0, { region: 'eu', broker: 'b1', highWatermark: 30 })).batches).toEqual([]);
  });

  it('a flipped byte in a batch body changes that batch CRC only, and marks it corrupt', async () => {
    const { dataDir, partDir, crcs } = await brokerDir(4);
    const first = join(partDir, (await segmentFiles(partDir))[0]!);
    const bytes = await readFile(first);
    const second = readBatchHeader(bytes, 0).sizeBytes;
    // Flip the last byte of the second batch (inside its records, covered by the CRC).
    const at = second + readBatchHeader(bytes, second).sizeBytes - 1;
    bytes[at] = bytes[at]! ^ 0xff;
    await writeFile(first, bytes);
    const r = await readReplicaBatches(dataDir, TOPIC, 1, { region: 'eu', broker: 'b1', highWatermark: 12 });
    expect(r.batches.length).toBe(4);
    const changed = r.batches.map((b, i) => b.crc !== crcs[i]);
    expect(changed).toEqual([false, true, false, false]);
    expect(r.batches.map((b) => b.corrupt === true)).toEqual([false, true, false, false]);
  });

  it('stops cleanly at a torn tail', async () => {
    const { dataDir, partDir } = await brokerDir(10);
    const files = await segmentFiles(partDir);
    const last = join(partDir, files[files.length - 1]!);
    const whole = await readReplicaBatches(dataDir, TOPIC, 1, { region: 'eu', broker: 'b1', highWatermark: 30 });
    await truncate(last, (await stat(last)).size - 5);
    const torn = await readReplicaBatches(dataDir, TOPIC, 1, { region: 'eu', broker: 'b1', highWatermark: 30 });
    expect(torn.batches).toEqual(whole.batches.slice(0, -1));
    // A tail shorter than a header also ends the walk without an error.
    await truncate(last, 10);
    const stub = await readReplicaBatches(dataDir, TOPIC, 1, { region: 'eu', broker: 'b1', highWatermark: 30 });
    const lastBase = Number(files[files.length - 1]!.slice(0, 20));
    expect(stub.batches).toEqual(whole.batches.filter((b) => b.baseOffset < lastBase));
  });

  it('refuses bad input with a typed error naming it', async () => {
    const { dataDir } = await brokerDir(1);
    const opts = { region: 'eu', broker: 'b1', highWatermark: 3 };
    expect(await codeOf(readReplicaBatches(dataDir, 'nope', 0, opts))).toBe('INVALID_ARGUMENT');
    expect(await codeOf(readReplicaBatches(dataDir, TOPIC, 2, opts))).toBe('INVALID_ARGUMENT');
    expect(await codeOf(readReplicaBatches(dataDir, TOPIC, -1, opts))).toBe('INVALID_ARGUMENT');
    expect(await codeOf(readReplicaBatches(dataDir, TOPIC, 0, { ...opts, highWatermark: -1 }))).toBe('INVALID_ARGUMENT');
    expect(await codeOf(readReplicaBatches(join(dataDir, 'missing'), TOPIC, 0, opts))).toBe('INVALID_DATA');
  });
});
