// Proves the defaults a new user gets from a 3-broker cell: a topic created without a replication
// factor (by `edgeq topics create`, the admin client or the protocol) has min(3, brokers) replicas
// and min.insync.replicas 2, so acks=all means two copies.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.ts';
import { eventually } from '../../src/testing/index.ts';
import { TestCell } from '../helpers/cell.ts';
import { cleanupTempDirs } from '../helpers/tmp.ts';

const BIN = fileURLToPath(new URL('../../bin/edgeq.js', import.meta.url));
const run = promisify(execFile);

let cell: TestCell | null = null;
afterAll(async () => {
  await cell?.close();
  await cleanupTempDirs();
});

describe('topic defaults in a cell', () => {
  it('replicates a topic created without a replication factor on min(3, brokers) with min.insync.replicas 2', async () => {
    cell = await new TestCell().start();
    const brokers = cell.addresses().join(',');
    await eventually(() => cell!.leaderOf('__consumer_offsets', 0) > 0, 15_000, 'the offsets topic');
    // As a new user would, with the command the README shows.
    await run(process.execPath, [BIN, 'topics', 'create', 'demo', '--partitions', '3', '--brokers', brokers], { env: { ...process.env, EDGEQ_LOG_LEVEL: 'warn' } });
    const client = createClient({ brokers: cell.addresses() });
    try {
      await client.admin().createTopics([{ name: 'via-admin', partitions: 1 }]);
      await client.admin().createTopics([{ name: 'two', partitions: 1, replicationFactor: 2 }]);
      const described = await client.admin().describeTopics(['demo', 'via-admin', 'two']);
      const byName = new Map(described.map((d) => [d.name, d]));
      for (const name of ['demo', 'via-admin']) {
        const d = byName.get(name)!;
        expect(d.replicationFactor, name).toBe(3);
        for (const p of d.partitions) expect(p.replicas.length, `${name}-${p.partition}`).toBe(3);
      }
      expect(byName.get('demo')!.config['min.insync.replicas']).toBe('2');
      expect(byName.get('two')!.config['min.insync.replicas']).toBe('1');
    } finally {
      await client.close();
    }
  }, 60_000);
});
