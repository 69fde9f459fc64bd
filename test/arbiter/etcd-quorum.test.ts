/** Proves that an EtcdArbiter on a 3-node etcd cluster fails writes with ARBITER_UNAVAILABLE in bounded time once two nodes are down (no quorum) and succeeds again once one of them returns. */
import { afterAll, describe, expect, it } from 'vitest';
import { isEdgeqError } from '../../src/core/index.ts';
import { EtcdArbiter } from '../../region/arbiter/index.ts';
import { startEtcdCluster, type EtcdCluster } from '../helpers/etcd.ts';
import { cleanupTempDirs } from '../helpers/tmp.ts';

let cluster: EtcdCluster | undefined;
afterAll(async () => {
  await cluster?.stop();
  await cleanupTempDirs();
});

describe('EtcdArbiter on a 3-node cluster', () => {
  it('loses writes without quorum and recovers when a node returns', async () => {
    cluster = await startEtcdCluster(3);
    const [n1, n2, n3] = cluster.nodes as [typeof cluster.nodes[0], typeof cluster.nodes[0], typeof cluster.nodes[0]];
    // Connected to the node that stays up: it alone cannot commit anything.
    const arbiter = new EtcdArbiter({ hosts: n1.clientUrl, requestTimeoutMs: 2_000 });
    try {
      const r1 = await arbiter.put('q/k', Buffer.from('before'));
      await Promise.all([n2.stop(), n3.stop()]);

      const started = Date.now();
      const err = await arbiter.put('q/k', Buffer.from('during')).catch((e: unknown) => e);
      expect(isEdgeqError(err, 'ARBITER_UNAVAILABLE')).toBe(true);
      expect(Date.now() - started).toBeLessThan(10_000);

      await n2.restart();
      await n2.waitHealthy();
      // The client may need a few tries: the gRPC channel and its circuit breaker recover.
      const deadline = Date.now() + 30_000;
      let r2 = 0;
      while (r2 === 0) {
        try {
          r2 = await arbiter.put('q/k', Buffer.from('after'));
        } catch (e) {
          if (!isEdgeqError(e, 'ARBITER_UNAVAILABLE') || Date.now() > deadline) throw e;
          await new Promise((resolve) => setTimeout(resolve, 200));
        }
      }
      expect(r2).toBeGreaterThan(r1);
      expect((await arbiter.get('q/k'))!.value.toString()).toBe('after');
    } finally {
      await arbiter.close();
    }
  });
});
