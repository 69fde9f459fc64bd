/** Proves EtcdArbiter's etcd-specific behaviour against a real etcd: TTLs in whole seconds, namespaces that isolate keys, refusal of a watch from a compacted revision, and ARBITER_UNAVAILABLE (not LEASE_EXPIRED) when etcd is down. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Etcd3 } from 'etcd3';
import { startEtcd, type EtcdCluster } from '../../test/helpers/etcd.ts';
import { cleanupTempDirs } from '../../test/helpers/tmp.ts';
import { EtcdArbiter } from './etcd-arbiter.ts';
import { isCompactedError } from './validation.ts';

let etcd: EtcdCluster;
beforeAll(async () => {
  etcd = await startEtcd();
});
afterAll(async () => {
  await etcd?.stop();
  await cleanupTempDirs();
});

describe('EtcdArbiter', () => {
  it('rounds lease TTLs up to whole seconds', async () => {
    const a = new EtcdArbiter({ hosts: etcd.endpoints });
    try {
      const lease = await a.grantLease(1500);
      expect(lease.ttlMs).toBe(2000);
      expect(await lease.keepAliveOnce()).toBe(2000);
      await lease.revoke();
      await expect(lease.revoke()).rejects.toMatchObject({ code: 'LEASE_EXPIRED' });
    } finally {
      await a.close();
    }
  });

  it('keeps namespaces apart', async () => {
    const a = new EtcdArbiter({ hosts: etcd.endpoints, namespace: 'ns-a/' });
    const b = new EtcdArbiter({ hosts: etcd.endpoints, namespace: 'ns-b/' });
    try {
      await a.put('k', Buffer.from('a'));
      await b.put('k', Buffer.from('b'));
      expect((await a.get('k'))!.value.toString()).toBe('a');
      expect((await b.getPrefix('')).map((kv) => [kv.key, kv.value.toString()])).toEqual([['k', 'b']]);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('refuses a watch from a compacted revision', async () => {
    const a = new EtcdArbiter({ hosts: etcd.endpoints, namespace: 'compact/' });
    const raw = new Etcd3({ hosts: etcd.endpoints });
    try {
      const r1 = await a.put('k', Buffer.from('1'));
      const r2 = await a.put('k', Buffer.from('2'));
      await raw.kv.compact({ revision: r2, physical: true });
      const err = await a.watchPrefix('', () => undefined, { fromRevision: r1 - 1 }).catch((e: unknown) => e);
      expect(isCompactedError(err)).toBe(true);
      // From the compaction point on is still fine.
      const w = await a.watchPrefix('', () => undefined, { fromRevision: r2 });
      await w.close();
    } finally {
      raw.close();
      await a.close();
    }
  });

  it('answers ARBITER_UNAVAILABLE when etcd is down, and LEASE_EXPIRED only for a lease etcd says is gone', async () => {
    const single = await startEtcd();
    const a = new EtcdArbiter({ hosts: single.endpoints, requestTimeoutMs: 1_000 });
    try {
      const lease = await a.grantLease(5_000);
      await single.stop();
      await expect(lease.keepAliveOnce()).rejects.toMatchObject({ code: 'ARBITER_UNAVAILABLE' });
      await expect(a.get('k')).rejects.toMatchObject({ code: 'ARBITER_UNAVAILABLE' });
      await expect(a.put('k', Buffer.from('x'))).rejects.toMatchObject({ code: 'ARBITER_UNAVAILABLE' });
    } finally {
      await a.close();
      await single.stop();
    }
  });
});
