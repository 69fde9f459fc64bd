// Proves through the gateway's routes, in front of a scripted cell on a fake network, that a read which cannot be served answers a retriable 503 (LEADER_NOT_AVAILABLE, Retry-After) once its time is spent, never a 200 with no records below the high watermark; that a read at the high watermark still answers an empty 200; and that /readyz answers 503 while a partition's leader does not answer and 200 when every leader does.
import { afterEach, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.ts';
import { scriptedCell, type ScriptedBroker } from '../../src/client/test-support.ts';
import { createGatewayApp, READ_SERVE_MS_MAX, READYZ_TIMEOUT_MS, type GatewayApp } from '../../src/gateway/index.ts';

/** Slack for a loaded machine on top of the gateway's own bounds. */
const LOADED_MACHINE_MS = 3_000;
const HIGH_WATERMARK = 2;

const apps: GatewayApp[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
});

function gateway(brokers: ScriptedBroker[], leaders: number[]): { app: GatewayApp; network: ReturnType<typeof scriptedCell> } {
  const network = scriptedCell({ brokers, topic: 't', leaders, highWatermark: HIGH_WATERMARK });
  const client = createClient({ brokers: brokers.filter((b) => !b.frozen).map((b) => `b${b.id}:${b.id}`), socketFactory: network.socketFactory });
  const app = createGatewayApp({ client, processMetrics: false });
  apps.push(app);
  return { app, network };
}

async function timed(app: GatewayApp, path: string) {
  const started = performance.now();
  const res = await app.request(path);
  return { res, body: (await res.json()) as { code?: string; retriable?: boolean; records?: unknown[]; highWatermark?: number }, elapsedMs: performance.now() - started };
}

describe('a read the cell cannot serve', () => {
  for (const fetch of ['never', 'empty'] as const) {
    it(`answers a retriable 503 with Retry-After when the leader's fetch ${fetch === 'never' ? 'never answers' : 'answers no records'} below the high watermark`, async () => {
      const { app } = gateway([{ id: 1, fetch }], [1]);
      const { res, body, elapsedMs } = await timed(app, '/v1/topics/t/partitions/0/records?offset=0&waitMs=0');
      expect({ status: res.status, code: body.code, retriable: body.retriable, retryAfter: res.headers.get('retry-after') }).toEqual({
        status: 503,
        code: 'LEADER_NOT_AVAILABLE',
        retriable: true,
        retryAfter: '1',
      });
      // It used its whole time (the records exist, so it kept asking), and no more.
      expect(elapsedMs).toBeGreaterThanOrEqual(READ_SERVE_MS_MAX - 50);
      expect(elapsedMs).toBeLessThan(READ_SERVE_MS_MAX + LOADED_MACHINE_MS);
    });
  }

  it('at the high watermark an empty answer is the truth: 200, no records', async () => {
    const { app } = gateway([{ id: 1, fetch: 'empty' }], [1]);
    const { res, body } = await timed(app, `/v1/topics/t/partitions/0/records?offset=${HIGH_WATERMARK}&waitMs=0`);
    expect(res.status).toBe(200);
    expect(body).toMatchObject({ records: [], highWatermark: HIGH_WATERMARK });
  });
});

describe('/readyz', () => {
  it('is 503 while a partition leader does not answer, 200 when every leader does', async () => {
    const frozen: ScriptedBroker = { id: 1, frozen: true };
    const { app, network } = gateway([frozen, { id: 2 }], [1, 2]);
    const notReady = await timed(app, '/readyz');
    expect({ status: notReady.res.status, code: notReady.body.code, retriable: notReady.body.retriable }).toEqual({ status: 503, code: 'BROKER_NOT_AVAILABLE', retriable: true });
    expect(notReady.res.headers.get('retry-after')).toBe('1');
    expect(notReady.elapsedMs).toBeLessThan(READYZ_TIMEOUT_MS + LOADED_MACHINE_MS);
    frozen.frozen = false;
    network.resume('b1:1');
    const ready = await timed(app, '/readyz');
    expect(ready.res.status).toBe(200);
  });
});
