// Proves quotas kept by the cell, with real in-process brokers on one arbiter: an AlterQuotas on
// any broker is one arbiter transaction under /edgeq/<cell>/quotas/<tenant>/<topic>; every other
// broker learns it through its watch and enforces it; a removal travels the same way; a
// restarted broker has them back from the arbiter; and a refused AlterQuotas writes no key.
import { afterEach, describe, expect, it } from 'vitest';
import { buildBatch } from '../../src/log/index.ts';
import { Acks, errorOf } from '../../src/protocol/index.ts';
import { RawClient } from '../../src/testing/index.ts';
import { eventually, TestCell } from '../../test/helpers/cell.ts';
import { cleanupTempDirs } from '../../test/helpers/tmp.ts';

let cell: TestCell | null = null;
const clients: RawClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  await cell?.close();
  cell = null;
  await cleanupTempDirs();
});

async function connect(port: number, clientId: string): Promise<RawClient> {
  const c = await RawClient.connect(port);
  clients.push(c);
  await c.call('ApiVersions', { clientId });
  return c;
}

const tenantsOn = async (c: RawClient) => (await c.call('DescribeQuotas', {})).quotas.map((q) => `${q.tenant}/${q.topic}:${q.recordsPerSec}`);

describe('quotas in a cell', () => {
  it('are written in one transaction, followed by every broker, enforced there, and back after a restart', async () => {
    cell = await new TestCell({ size: 2 }).start();
    const b1 = cell.brokers.get(1)!;
    const a1 = await connect(b1.port, 'admin');
    const res = await a1.call('AlterQuotas', {
      ops: [
        { tenant: 'acme', topic: '*', recordsPerSec: 10, bytesPerSec: 1_000_000, burstRecords: 10 },
        { tenant: '*', topic: 'orders', recordsPerSec: 500, bytesPerSec: 1_000_000 },
      ],
    });
    expect(res.results.map((r) => errorOf(r.error))).toEqual([null, null]);
    // Broker 1 answers with the change in force (its own write is taken in before the answer).
    expect(await tenantsOn(a1)).toEqual(['*/orders:500', 'acme/*:10']);
    const kvs = await cell.arbiter.getPrefix('/edgeq/test/quotas/');
    expect(kvs.map((kv) => kv.key)).toEqual(['/edgeq/test/quotas/*/orders', '/edgeq/test/quotas/acme/*']);
    // One transaction: one revision.
    expect(new Set(kvs.map((kv) => kv.modRevision)).size).toBe(1);
    expect(JSON.parse(kvs[1]!.value.toString())).toMatchObject({ tenant: 'acme', topic: '*', recordsPerSec: 10, burstRecords: 10, scope: 'local' });

    // Broker 2 follows through its watch, and enforces: acme gets 10 records, then a throttle.
    const b2 = cell.brokers.get(2)!;
    const a2 = await connect(b2.port, 'admin');
    await eventually(async () => (await tenantsOn(a2)).length === 2, 10_000, 'broker 2 to have both quotas');
    await a2.call('CreateTopics', { topics: [{ name: 'q', partitions: 1, replicationFactor: 2 }] });
    // A leader that has applied q itself: before that it answers LEADER_NOT_AVAILABLE ("still being
    // set up"), which the cell's state (what leaderOf reads) does not show.
    await eventually(async () => cell!.leaderOf('q', 0) > 0 && cell!.brokers.get(cell!.leaderOf('q', 0))?.topics.get('q') !== undefined, 10_000, 'a leader for q that has applied it');
    const leader = cell.brokers.get(cell.leaderOf('q', 0))!;
    const acme = await connect(leader.port, 'acme');
    const produce = async (n: number) =>
      (
        await acme.call('Produce', {
          acks: Acks.ALL,
          timeoutMs: 10_000,
          topics: [{ name: 'q', partitions: [{ partition: 0, records: await buildBatch(Array.from({ length: n }, (_, i) => ({ value: `v${i}` }))) }] }],
        })
      );
    const ok = await produce(10);
    expect(errorOf(ok.topics[0]!.partitions[0]!.error)).toBeNull();
    const refused = await produce(10);
    expect(errorOf(refused.topics[0]!.partitions[0]!.error)?.code).toBe('QUOTA_EXCEEDED');
    expect(refused.throttleMs).toBeGreaterThan(0);

    // A removal on broker 2 reaches broker 1.
    const del = await a2.call('AlterQuotas', { ops: [{ tenant: '*', topic: 'orders', remove: true }] });
    expect(del.results[0]!.existed).toBe(true);
    await eventually(async () => (await tenantsOn(a1)).length === 1, 10_000, 'broker 1 to see the removal');
    expect((await cell.arbiter.getPrefix('/edgeq/test/quotas/')).map((kv) => kv.key)).toEqual(['/edgeq/test/quotas/acme/*']);

    // A restarted broker reads them back from the arbiter (its data folder holds no quotas.json).
    await cell.stopBroker(2);
    const again = await cell.startBroker(2);
    const a3 = await connect(again.port, 'admin');
    expect(await tenantsOn(a3)).toEqual(['acme/*:10']);
  });

  it('writes no key for a refused AlterQuotas', async () => {
    cell = await new TestCell({ size: 1 }).start();
    const a = await connect(cell.brokers.get(1)!.port, 'admin');
    const res = await a.call('AlterQuotas', {
      ops: [
        { tenant: 'good', topic: '*', recordsPerSec: 10, bytesPerSec: 10 },
        { tenant: 'bad', topic: '*', recordsPerSec: 1.5, bytesPerSec: 10 },
      ],
    });
    expect(res.results.map((r) => [errorOf(r.error)?.code, r.invalidField])).toEqual([
      ['INVALID_ARGUMENT', 'ops'],
      ['INVALID_ARGUMENT', 'recordsPerSec'],
    ]);
    expect(await cell.arbiter.getPrefix('/edgeq/test/quotas/')).toEqual([]);
    expect(await tenantsOn(a)).toEqual([]);
  });
});
