// Proves that a broker whose data folder holds a corrupt middle segment opens, keeps the valid
// prefix, and counts every file its recovery moved aside in edgeq_log_corrupt_segments_total
// (the log observer the broker builds reaches the metric).
import { afterAll, describe, expect, it } from 'vitest';
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Broker } from '../../src/broker/index.ts';
import { buildBatch, splitBatches } from '../../src/log/index.ts';
import { Acks } from '../../src/protocol/index.ts';
import { RawClient, cleanupTempDirs, tempDir } from '../../src/testing/index.ts';

afterAll(cleanupTempDirs);

/** The folders under `root` that hold at least `n` segment files. */
async function logDirs(root: string, n: number): Promise<string[]> {
  const out: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    const entries = await readdir(dir, { withFileTypes: true });
    if (entries.filter((e) => e.isFile() && /^\d{20}\.log$/.test(e.name)).length >= n) out.push(dir);
    for (const e of entries) if (e.isDirectory()) await walk(join(dir, e.name));
  };
  await walk(root);
  return out;
}

function sample(text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
  return line === undefined ? Number.NaN : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('corrupt segments in a broker', () => {
  it('are moved aside at start and counted in edgeq_log_corrupt_segments_total', async () => {
    const dataDir = await tempDir('edgeq-corrupt-broker-');
    const first = await Broker.start({ dataDir, port: 0 });
    const c = await RawClient.connect(first.port);
    const created = await c.call('CreateTopics', { topics: [{ name: 'cs', partitions: 1, replicationFactor: 1, config: { 'segment.bytes': '1024', 'max.message.bytes': '1024' } }] });
    expect(created.topics[0]!.error ?? null, JSON.stringify(created.topics[0])).toBeNull();
    // ~450-byte batches: two fill a 1024-byte segment, so eight make four segments.
    for (let i = 0; i < 8; i++) {
      const batch = await buildBatch([{ value: Buffer.alloc(380, 97 + i) }]);
      const r = await c.call('Produce', { acks: Acks.ALL, timeoutMs: 5000, topics: [{ name: 'cs', partitions: [{ partition: 0, records: batch }] }] });
      expect(r.topics[0]!.partitions[0]!.error ?? null).toBeNull();
    }
    c.close();
    await first.close();

    const dirs = await logDirs(dataDir, 3);
    expect(dirs).toHaveLength(1);
    const dir = dirs[0]!;
    const segments = (await readdir(dir)).filter((n) => n.endsWith('.log')).sort();
    // Damage the second batch of the second segment; without a checkpoint recovery scans it all.
    const middle = join(dir, segments[1]!);
    const bytes = await readFile(middle);
    const cut = splitBatches(bytes)[0]!.length;
    bytes[cut + 40] = bytes[cut + 40]! ^ 0xff;
    await writeFile(middle, bytes);
    await rm(join(dir, 'recovery-checkpoint.json'));

    const second = await Broker.start({ dataDir, port: 0 });
    try {
      const aside = (await readdir(dir)).filter((n) => n.endsWith('.corrupt') && !/\.(time)?index\./.test(n));
      // The cut tail of the second segment and every later segment.
      expect(aside).toHaveLength(1 + segments.length - 2);
      expect(sample(await second.metrics.scrape(), 'edgeq_log_corrupt_segments_total')).toBe(aside.length);
    } finally {
      await second.close();
    }
  });
});
