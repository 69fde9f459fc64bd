// Proves the admin client's QuotaAdmin (listQuotas, putQuota, deleteQuota) against a real broker:
// quotas round-trip as parsed Quotas, a delete says whether there was one, a bad value is a typed
// INVALID_ARGUMENT naming the field with nothing changed; and against a scripted broker, that an
// AlterQuotas failing with a retriable error (the arbiter out of reach) is retried.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseQuota, type Quota } from '../../ratelimit/index.ts';
import { apiSpec } from '../protocol/index.ts';
import { FakeNetwork } from '../protocol/test-support.ts';
import { createClient } from './index.ts';
import { TestBroker } from './test-support.ts';

let tb: TestBroker;
beforeAll(async () => {
  tb = await TestBroker.start();
});
afterAll(async () => tb?.stop());

describe('admin quotas', () => {
  it('puts, lists and deletes quotas; bad input is INVALID_ARGUMENT naming the field, nothing changed', async () => {
    const client = createClient({ brokers: [tb.address], clientId: 'admin' });
    const admin = client.admin();
    const a = parseQuota('acme', '*', { recordsPerSec: 100, bytesPerSec: 10_000 });
    const b = parseQuota('*', 'orders', { recordsPerSec: 5, bytesPerSec: 500, burstRecords: 1, burstBytes: 50, scope: 'global' });
    await admin.putQuota(a);
    await admin.putQuota(b);
    expect(await admin.listQuotas()).toEqual([b, a]);
    await admin.putQuota({ ...a, recordsPerSec: 200 });
    expect((await admin.listQuotas())[1]!.recordsPerSec).toBe(200);

    const before = await admin.listQuotas();
    const bad: [Quota, string][] = [
      [{ ...a, recordsPerSec: 2.5 }, 'recordsPerSec'],
      [{ ...a, bytesPerSec: -1 }, 'bytesPerSec'],
      [{ ...a, burstRecords: 0 }, 'burstRecords'],
      [{ ...a, burstBytes: 2e12 }, 'burstBytes'],
      [{ ...a, tenant: 'no spaces' }, 'tenant'],
      [{ ...a, topic: 'a/b' }, 'topic'],
      [{ ...a, scope: 'everywhere' as 'local' }, 'scope'],
    ];
    for (const [q, field] of bad) {
      await expect(admin.putQuota(q), field).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', retriable: false, details: { field } });
    }
    expect(await admin.listQuotas()).toEqual(before);

    expect(await admin.deleteQuota('*', 'orders')).toBe(true);
    expect(await admin.deleteQuota('*', 'orders')).toBe(false);
    expect(await admin.listQuotas()).toEqual([{ ...a, recordsPerSec: 200 }]);
    await client.close();
  });

  it('retries an AlterQuotas refused with a retriable error', async () => {
    const network = new FakeNetwork();
    let alters = 0;
    network.set('b1:1', {
      brokerId: 1,
      handler: (frame, reply) => {
        const name = apiSpec(frame.apiKey)!.name;
        if (name === 'Metadata') reply({ brokers: [{ id: 1, host: 'b1', port: 1, region: '' }], controllerId: 1, clusterId: 'x', topics: [] });
        if (name === 'AlterQuotas') {
          alters++;
          const error = alters === 1 ? { code: 44, message: 'arbiter unreachable', retriable: true } : null;
          reply({ results: [{ tenant: 'acme', topic: '*', error, existed: false }] });
        }
      },
    });
    const client = createClient({ brokers: ['b1:1'], socketFactory: network.socketFactory, retry: { retryBackoffMs: 1, retryBackoffMsMax: 2 } });
    await client.admin().putQuota(parseQuota('acme', '*', { recordsPerSec: 1, bytesPerSec: 1 }));
    expect(alters).toBe(2);
    await client.close();
  });
});
