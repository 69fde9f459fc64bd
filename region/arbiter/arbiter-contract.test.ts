/** Proves that MemoryArbiter (fake and real clock), EmbeddedArbiter (against a real `edgeq arbiter` process) and EtcdArbiter (against a real etcd) all keep the arbiter contract. */
import { afterAll, beforeAll } from 'vitest';
import { FakeClock } from '../../src/core/index.ts';
import { spawnArbiter, type ArbiterProcess } from '../../test/helpers/arbiter-process.ts';
import { startEtcd, type EtcdCluster } from '../../test/helpers/etcd.ts';
import { cleanupTempDirs, tempDir } from '../../test/helpers/tmp.ts';
import type { Arbiter } from './arbiter.ts';
import { defineArbiterContract } from './arbiter-contract.ts';
import { EmbeddedArbiter } from './embedded-arbiter.ts';
import { EtcdArbiter } from './etcd-arbiter.ts';
import { MemoryArbiter } from './memory-arbiter.ts';

const realTime = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

afterAll(cleanupTempDirs);

{
  const clock = new FakeClock();
  const arbiter = new MemoryArbiter({ clock });
  afterAll(() => arbiter.close());
  defineArbiterContract('MemoryArbiter on a fake clock', () => ({ arbiter: () => arbiter, elapse: async (ms) => clock.advance(ms), leaseTtlMs: 1000, expirySlackMs: 0 }));
}

{
  const arbiter = new MemoryArbiter();
  afterAll(() => arbiter.close());
  defineArbiterContract('MemoryArbiter on the real clock', () => ({ arbiter: () => arbiter, elapse: realTime, leaseTtlMs: 300, expirySlackMs: 100 }));
}

{
  let proc: ArbiterProcess | undefined;
  let arbiter: Arbiter | undefined;
  beforeAll(async () => {
    proc = await spawnArbiter({ dataDir: await tempDir('arbiter-contract-') });
    arbiter = new EmbeddedArbiter({ port: proc.port });
  });
  afterAll(async () => {
    await arbiter?.close();
    await proc?.kill();
  });
  defineArbiterContract('EmbeddedArbiter against an `edgeq arbiter` process', () => ({ arbiter: () => arbiter!, elapse: realTime, leaseTtlMs: 1000, expirySlackMs: 200 }));
}

{
  let etcd: EtcdCluster | undefined;
  let arbiter: Arbiter | undefined;
  beforeAll(async () => {
    etcd = await startEtcd();
    arbiter = new EtcdArbiter({ hosts: etcd.endpoints, namespace: 'edgeq-test/' });
  });
  afterAll(async () => {
    await arbiter?.close();
    await etcd?.stop();
  });
  // etcd's lessor checks expiry every 500 ms: a lease may outlive its TTL by that much.
  defineArbiterContract('EtcdArbiter against a real etcd', () => ({ arbiter: () => arbiter!, elapse: realTime, leaseTtlMs: 1000, expirySlackMs: 1500 }));
}
