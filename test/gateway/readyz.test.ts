// Proves /readyz answers 503 with a typed problem when a partition has no live leader (its only
// replica's broker is gone), and 200 again once that broker is back.
import { afterAll, describe, expect, it } from 'vitest';
import { eventually, TestCell } from '../helpers/cell.ts';
import { createClient } from '../../src/client/index.ts';
import { createGatewayApp } from '../../src/gateway/index.ts';

const cell = new TestCell();
afterAll(async () => cell.close());

describe('/readyz', () => {
  it('is 503 while a partition has no leader and 200 when it has one again', async () => {
    await cell.start();
    const client = createClient({ brokers: cell.addresses(), metadataMaxAgeMs: 200 });
    const app = createGatewayApp({ client });
    try {
      await client.admin().createTopics([{ name: 'solo', partitions: 1, replicationFactor: 1 }]);
      await eventually(async () => (await app.request('/readyz')).status === 200, 15_000, 'ready');
      const owner = cell.leaderOf('solo', 0);
      await cell.stopBroker(owner);
      await eventually(async () => (await app.request('/readyz')).status === 503, 15_000, 'not ready');
      const res = await app.request('/readyz');
      expect(res.headers.get('content-type')).toContain('application/problem+json');
      expect(((await res.json()) as { code: string }).code).toBe('LEADER_NOT_AVAILABLE');
      await cell.startBroker(owner);
      await eventually(async () => (await app.request('/readyz')).status === 200, 15_000, 'ready again');
    } finally {
      await app.close();
      await client.close();
    }
  }, 60_000);
});
