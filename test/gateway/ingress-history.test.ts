// Proves with real processes (`edgeq dev`, one region of one broker, a 1 s ingress step) that the gateway writes its ingress steps to __ingress_history, that they sum to what was produced, and that after a restart of the whole deployment on the same data dir the gateway's history read back at start holds the steps from before.
import { afterAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.ts';
import { decodeIngressStep, INGRESS_HISTORY_TOPIC, type IngressStepRecord } from '../../src/gateway/ingress-history/index.ts';
import { waitFor } from '../../src/testing/index.ts';
import { freeRange, startDevRegions, stopAllDevs, DEV_REGIONS_PORT_SPAN } from '../helpers/dev-process.ts';
import { cleanupTempDirs, tempDir } from '../helpers/tmp.ts';

afterAll(async () => {
  await stopAllDevs();
  await cleanupTempDirs();
});

const STEP_MS = 1_000;
/** Produce rounds, one HTTP request of RECORDS_PER_ROUND each, ROUND_GAP_MS apart: a few seconds. */
const ROUNDS = 12;
const RECORDS_PER_ROUND = 25;
const ROUND_GAP_MS = 300;
/** Bound on the steps reaching the topic after the last produce (a loaded 2-core machine). */
const STEPS_LAND_MS = 30_000;

/** Every step in the topic, read from the start by a plain client. */
async function readSteps(brokers: string): Promise<IngressStepRecord[]> {
  const client = createClient({ brokers: brokers.split(','), clientId: 'ingress-history-test' });
  try {
    const consumer = client.consumer({ fromBeginning: true });
    consumer.assign([{ topic: INGRESS_HISTORY_TOPIC, partition: 0 }]);
    const out: IngressStepRecord[] = [];
    // Bounded: a few polls after the last record returned.
    for (let empty = 0, i = 0; empty < 2 && i < 100; i++) {
      const got = await consumer.poll({ timeoutMs: 500 });
      if (got.length === 0) empty++;
      for (const r of got) out.push(decodeIngressStep(r.key, r.value));
    }
    return out;
  } finally {
    await client.close();
  }
}

const recordsOf = (steps: IngressStepRecord[]) => steps.reduce((n, s) => n + s.records * (s.stepMs / 1000), 0);
const gauge = async (gateway: string) => {
  const m = /^edgeq_ingress_history_steps (\S+)$/m.exec(await (await fetch(`${gateway}/metrics`)).text());
  return m ? Number(m[1]) : null;
};

describe('ingress history under edgeq dev', () => {
  it('records the produced records per step and reads them back after a restart', async () => {
    const base = await freeRange(DEV_REGIONS_PORT_SPAN);
    const dataDir = await tempDir('edgeq-ingress-history-');
    const opts = { regions: '1', brokersPerRegion: 1, env: { EDGEQ_INGRESS_STEP_MS: String(STEP_MS) } };
    const dev = startDevRegions(dataDir, base, opts);
    const ready = await dev.ready;
    const created = await fetch(`${ready.gateway}/v1/topics`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'ih', partitions: 1, replicationFactor: 1 }) });
    expect(created.status).toBe(201);
    for (let i = 0; i < ROUNDS; i++) {
      const records = Array.from({ length: RECORDS_PER_ROUND }, (_, k) => ({ value: `r${i}-${k}` }));
      const res = await fetch(`${ready.gateway}/v1/topics/ih/records?acks=all`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ records }) });
      expect(res.status).toBe(200);
      await new Promise((r) => setTimeout(r, ROUND_GAP_MS));
    }
    const produced = ROUNDS * RECORDS_PER_ROUND;
    // The steps are written at each boundary: wait until the last produce's step is in the topic.
    const steps = await waitFor('the steps to sum to what was produced', STEPS_LAND_MS, async () => {
      const s = await readSteps(ready.brokers);
      return Math.abs(recordsOf(s) - produced) < 1e-6 ? s : undefined;
    }, 500);
    expect(steps.every((s) => s.t % STEP_MS === 0 && s.stepMs === STEP_MS)).toBe(true);
    expect(steps.some((s) => s.recordsMax > 0)).toBe(true);
    const firstT = Math.min(...steps.filter((s) => s.records > 0).map((s) => s.t));
    // The gateway's own history sees them too.
    await waitFor('the history gauge', STEPS_LAND_MS, async () => ((await gauge(ready.gateway)) ?? 0) >= 3 || undefined);

    dev.child.kill('SIGTERM');
    expect(await dev.exited).toBe(0);
    const again = startDevRegions(dataDir, base, opts);
    const ready2 = await again.ready;
    // Read back at start: the history reaches from before the restart (its first busy step) to now.
    const held = await waitFor('the history to be read back', STEPS_LAND_MS, async () => {
      const n = await gauge(ready2.gateway);
      return n !== null && n >= Math.floor((Date.now() - firstT) / STEP_MS) - 2 ? n : undefined;
    }, 250);
    expect(held).toBeGreaterThan(ROUNDS * ROUND_GAP_MS / STEP_MS);
    expect(recordsOf(await readSteps(ready2.brokers))).toBeGreaterThanOrEqual(produced - 1e-6);
    again.child.kill('SIGTERM');
    expect(await again.exited).toBe(0);
  }, 400_000);
});
