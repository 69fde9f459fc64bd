// Proves with real processes (`edgeq dev`, one region of one broker) that the gateway takes its limiter settings from the environment the benchmark sets on `edgeq dev` (EDGEQ_LIMITER*, EDGEQ_TENANT_WEIGHTS), that its load signals read the real cell through the background poll (the broker's fsync p99, under-replicated partitions), and that produces through it are counted per tenant.
import { afterAll, describe, expect, it } from 'vitest';
import type { LimiterView } from '../../ratelimit/index.ts';
import { eventually } from '../../src/testing/index.ts';
import { freeRange, startDevRegions, stopAllDevs, DEV_REGIONS_PORT_SPAN } from '../helpers/dev-process.ts';
import { cleanupTempDirs, tempDir } from '../helpers/tmp.ts';

afterAll(async () => {
  await stopAllDevs();
  await cleanupTempDirs();
});

/** Bound on the gateway's first intervals and cell polls after ready (a loaded 2-core machine). */
const SETTLE_MS_MAX = 30_000;

describe('the limiter of a gateway under edgeq dev', () => {
  it('reads EDGEQ_LIMITER* and EDGEQ_TENANT_WEIGHTS, polls the real cell and counts produces', async () => {
    const base = await freeRange(DEV_REGIONS_PORT_SPAN);
    const dev = startDevRegions(await tempDir('edgeq-limiter-dev-'), base, {
      regions: '1',
      brokersPerRegion: 1,
      env: { EDGEQ_LIMITER: 'seeds', EDGEQ_LIMITER_INTERVAL_MS: '200', EDGEQ_LIMITER_INITIAL_PER_SEC: '777', EDGEQ_LIMITER_TARGET_P99_MS: '35', EDGEQ_TENANT_WEIGHTS: 'anonymous=3' },
    });
    const ready = await dev.ready;
    const limiter = async () => (await (await fetch(`${ready.gateway}/v1/limiter`)).json()) as LimiterView;
    const first = await limiter();
    expect(first).toMatchObject({ controller: 'seeds', intervalMs: 200 });
    expect(first.signals.produceP99Ms.target).toBe(35);
    expect(first.capacityPerSec).toBeLessThanOrEqual(777);

    const created = await fetch(`${ready.gateway}/v1/topics`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'lim', partitions: 1, replicationFactor: 1 }) });
    expect(created.status).toBe(201);
    const produced = await fetch(`${ready.gateway}/v1/topics/lim/records?acks=all`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ records: [{ value: 'a' }, { value: 'b' }] }) });
    expect(produced.status).toBe(200);

    // The cell's figures come from the background poll: numbers, not null (unreadable).
    await eventually(async () => {
      const v = await limiter();
      return v.signals.fsyncP99Ms.value !== null && v.signals.underReplicatedPartitions.value === 0 && v.signals.rssMb.value! > 0;
    }, SETTLE_MS_MAX, 'the cell signals to be read');
    const metrics = await (await fetch(`${ready.gateway}/metrics`)).text();
    expect(metrics).toMatch(/^edgeq_limiter_admitted_total\{tenant="anonymous"\} 2$/m);
    const v = await limiter();
    expect(v.tenants).toEqual([expect.objectContaining({ tenant: 'anonymous', weight: 3 })]);
    dev.child.kill('SIGTERM');
    expect(await dev.exited).toBe(0);
  }, 200_000);
});
