// Proves, with real processes, that quotas survive a SIGKILL of the broker keeping them: a lone
// broker reads them back from quotas.json in its data folder, and the brokers of a cell (an
// embedded arbiter process) from the arbiter; both enforce them again after the restart.
import { afterAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.ts';
import { parseQuota } from '../../ratelimit/index.ts';
import { buildBatch } from '../../src/log/index.ts';
import { Acks, errorOf } from '../../src/protocol/index.ts';
import { RawClient, waitFor } from '../../src/testing/index.ts';
import { spawnBroker } from '../helpers/broker-process.ts';
import { ProcessCell } from '../helpers/cell-process.ts';
import { cleanupTempDirs, tempDir } from '../helpers/tmp.ts';

afterAll(cleanupTempDirs);

const QUOTAS = [parseQuota('acme', 'q', { recordsPerSec: 10, bytesPerSec: 1_000_000, burstRecords: 10 }), parseQuota('*', '*', { recordsPerSec: 100_000, bytesPerSec: 1e9, scope: 'global' })];
const sorted = [...QUOTAS].sort((a, b) => a.tenant.localeCompare(b.tenant));

/** A produce of 10 records to q, then another, as tenant acme: the second is over the quota. */
async function expectEnforced(port: number): Promise<void> {
  const c = await RawClient.connect(port);
  try {
    await c.call('ApiVersions', { clientId: 'acme' });
    const produce = async () =>
      (await c.call('Produce', { acks: Acks.ALL, timeoutMs: 10_000, topics: [{ name: 'q', partitions: [{ partition: 0, records: await buildBatch(Array.from({ length: 10 }, () => ({ value: 'x' }))) }] }] })).topics[0]!
        .partitions[0]!;
    expect(errorOf((await produce()).error)).toBeNull();
    expect(errorOf((await produce()).error)?.code).toBe('QUOTA_EXCEEDED');
  } finally {
    c.close();
  }
}

describe('quotas across a restart', () => {
  it('a lone broker keeps them in quotas.json', async () => {
    const dir = await tempDir();
    let proc = await spawnBroker({ dataDir: dir });
    try {
      let client = createClient({ brokers: [`127.0.0.1:${proc.port}`], clientId: 'admin' });
      const admin = client.admin();
      for (const q of QUOTAS) await admin.putQuota(q);
      await admin.createTopics([{ name: 'q', partitions: 1 }]);
      expect(await admin.listQuotas()).toEqual(sorted);
      await client.close();
      await proc.kill('SIGKILL');

      proc = await spawnBroker({ dataDir: dir, port: proc.port });
      client = createClient({ brokers: [`127.0.0.1:${proc.port}`], clientId: 'admin' });
      expect(await client.admin().listQuotas()).toEqual(sorted);
      await expectEnforced(proc.port);
      await client.close();
    } finally {
      await proc.kill('SIGTERM');
    }
  });

  it('the brokers of a cell read them back from the arbiter', async () => {
    const cell = await new ProcessCell({ size: 2 }).start();
    try {
      let client = createClient({ brokers: cell.addresses(), clientId: 'admin' });
      for (const q of QUOTAS) await client.admin().putQuota(q);
      await client.admin().createTopics([{ name: 'q', partitions: 1, replicationFactor: 2 }]);
      // Every broker answers DescribeQuotas alike (the one that took the write and the other).
      for (const id of [1, 2]) {
        const one = createClient({ brokers: [`127.0.0.1:${cell.portOf(id)}`], clientId: 'admin' });
        await waitFor(`broker ${id} to list both quotas`, 10_000, async () => ((await one.admin().listQuotas()).length === 2 ? true : undefined));
        await one.close();
      }
      await client.close();
      await cell.kill(1);
      await cell.kill(2);
      await cell.startBroker(1);
      await cell.startBroker(2);
      for (const id of [1, 2]) {
        const one = createClient({ brokers: [`127.0.0.1:${cell.portOf(id)}`], clientId: 'admin' });
        expect(await one.admin().listQuotas()).toEqual(sorted);
        await one.close();
      }
      // Enforced again where q is led.
      client = createClient({ brokers: cell.addresses(), clientId: 'admin' });
      const leader = await waitFor('a leader for q', 20_000, async () => {
        const [d] = await client.admin().describeTopics(['q']);
        const id = d?.partitions[0]?.leaderId ?? -1;
        return id > 0 ? id : undefined;
      });
      await client.close();
      await expectEnforced(cell.portOf(leader));
    } finally {
      await cell.close();
    }
  });
});
