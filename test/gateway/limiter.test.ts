// Proves the admission limiter in the gateway over a real 3-broker cell: GET /v1/limiter answers its shape; with an injected signal over target the produce route (JSON and protobuf) answers 503 problem+json of type temporary-reduced-capacity with Retry-After and RateLimit headers and writes nothing (no high watermark moves); admitted produces finish their tickets (nothing left in flight, the acknowledged rate counted); the limiter's series are in /metrics; and the gateway's own signal source reads the real cell (fsync p99 from the brokers, under-replicated partitions once a broker stops).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/core/index.ts';
import { buildBatch } from '../../src/log/index.ts';
import { Acks, encodeMessage } from '../../src/protocol/index.ts';
import { eventually } from '../../src/testing/index.ts';
import { GatewayLoadSignals } from '../../src/gateway/load-signals.ts';
import { AdmissionLimiter, SIGNAL_NAMES, type LimiterView, type LoadSignals } from '../../ratelimit/index.ts';
import { GatewayOnCell } from './gateway-on-cell.ts';

const TOPIC = 'lim-orders';
const TARGET_P99_MS = 20;
const INTERVAL_MS = 1000;
/** Bound on the cell's background states (ISR changes after a broker stops). */
const SETTLE_MS_MAX = 30_000;

/** The signals the test injects. */
const injected: { now: Partial<LoadSignals> } = { now: {} };
// The limiter runs on a fake clock, stepped by the test: its buckets refill only when told to.
const clock = new FakeClock();
const limiter = new AdmissionLimiter({ controller: 'edgeq', intervalMs: INTERVAL_MS, initialPerSec: 200, targets: { produceP99Ms: TARGET_P99_MS }, signals: { read: () => ({ ...injected.now }) }, clock });

let gw: GatewayOnCell;

beforeAll(async () => {
  gw = await GatewayOnCell.start({ limits: { recordsMax: 1_000 }, topics: [{ name: TOPIC, partitions: 2 }], limiter });
});

afterAll(async () => {
  limiter.close();
  await gw?.close();
});

const produceJson = (records: unknown[]) => gw.app.request(`/v1/topics/${TOPIC}/records?acks=all`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ records }) });

async function watermarks(): Promise<number[]> {
  const status = await gw.client.admin().cellStatus();
  return status.partitions.filter((p) => p.topic === TOPIC).map((p) => p.highWatermark);
}

async function view(): Promise<LimiterView> {
  const res = await gw.app.request('/v1/limiter');
  expect(res.status).toBe(200);
  return (await res.json()) as LimiterView;
}

/** Takes everything the anonymous tenant's buckets hold (bounded: the capacity is a few hundred). */
function drain(): void {
  for (let i = 0; i < 100_000; i++) {
    try {
      limiter.admit('anonymous', 1).done(true, 1);
    } catch {
      return;
    }
  }
  throw new Error('the buckets never ran dry');
}

describe('the admission limiter in the gateway', () => {
  it('GET /v1/limiter answers its shape', async () => {
    const v = await view();
    expect(Object.keys(v).sort()).toEqual(['achievedPerSec', 'binding', 'capacityPerSec', 'ceilingPerSec', 'plannedPerSec', 'concurrencyLimit', 'controller', 'demandPerSec', 'inFlight', 'intervalMs', 'pressure', 'signals', 'tenants'].sort());
    expect(v).toMatchObject({ controller: 'edgeq', intervalMs: INTERVAL_MS, capacityPerSec: 200, ceilingPerSec: null, inFlight: 0 });
    expect(Object.keys(v.signals).sort()).toEqual([...SIGNAL_NAMES].sort());
    expect(v.signals.produceP99Ms.target).toBe(TARGET_P99_MS);
  });

  it('an admitted produce finishes its ticket: nothing in flight, its records acknowledged', async () => {
    const res = await produceJson([{ value: 'a' }, { value: 'b' }, { value: 'c' }]);
    expect(res.status).toBe(200);
    clock.advance(INTERVAL_MS);
    limiter.tick();
    const v = await view();
    expect(v.inFlight).toBe(0);
    expect(v.achievedPerSec).toBe(3);
    expect(v.tenants).toEqual([expect.objectContaining({ tenant: 'anonymous', demandPerSec: 3, admittedPerSec: 3, throttledPerSec: 0 })]);
    expect(v.signals.produceP99Ms.value).toBeGreaterThan(0);
  });

  it('with a signal over target, produce answers 503 temporary-reduced-capacity with the headers and writes nothing', async () => {
    injected.now = { produceP99Ms: 4 * TARGET_P99_MS };
    clock.advance(INTERVAL_MS);
    limiter.tick();
    const cut = await view();
    expect(cut.capacityPerSec).toBeLessThan(200);
    expect(cut.binding).toBe('produceP99Ms');
    drain();
    const before = await watermarks();
    const refusals = [
      await produceJson([{ value: 'x', partition: 0 }, { value: 'y', partition: 1 }]),
      await gw.app.request(`/v1/topics/${TOPIC}/records`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-protobuf' },
        body: new Uint8Array(encodeMessage('ProduceRequest', { acks: Acks.ALL, timeoutMs: 10_000, topics: [{ name: TOPIC, partitions: [{ partition: 0, records: await buildBatch([{ value: 'pb' }]) }] }] })),
      }),
    ];
    for (const res of refusals) {
      expect(res.status).toBe(503);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
      expect(await res.json()).toMatchObject({ type: 'https://iana.org/assignments/http-problem-types#temporary-reduced-capacity', code: 'TEMPORARY_REDUCED_CAPACITY', status: 503, retriable: true });
      expect(res.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
      expect(res.headers.get('ratelimit-policy')).toMatch(/^"capacity";q=\d+;w=1$/);
      expect(res.headers.get('ratelimit')).toMatch(/^"capacity";r=0;t=\d+$/);
    }
    expect(await watermarks()).toEqual(before);
    // Quiet again and a second later: the next produce lands exactly at the old high watermarks,
    // so nothing of the refused requests was written (not even late, through the same producer).
    injected.now = {};
    clock.advance(INTERVAL_MS);
    limiter.tick();
    const markers = await produceJson(before.map((_, partition) => ({ value: 'marker', partition })));
    expect(markers.status).toBe(200);
    const { offsets } = (await markers.json()) as { offsets: { offset: number }[] };
    expect(offsets.map((o) => o.offset)).toEqual(before);
    clock.advance(INTERVAL_MS);
    limiter.tick();
    expect((await view()).tenants[0]).toMatchObject({ tenant: 'anonymous' });
    expect(limiter.totals().find((t) => t.tenant === 'anonymous')!.throttled).toBeGreaterThanOrEqual(3);
  });

  it('exports the limiter\'s series in /metrics', async () => {
    const text = await (await gw.app.request('/metrics')).text();
    expect(text).toMatch(/^edgeq_limiter_capacity_records_per_second \d+(\.\d+)?$/m);
    expect(text).toMatch(/^edgeq_limiter_admitted_total\{tenant="anonymous"\} [1-9]\d*$/m);
    expect(text).toMatch(/^edgeq_limiter_throttled_total\{tenant="anonymous"\} [1-9]\d*$/m);
    expect(text).toMatch(/^edgeq_limiter_signal\{signal="produceP99Ms"\} \S+$/m);
    expect(text).toMatch(/^edgeq_limiter_pressure \S+$/m);
    for (const s of SIGNAL_NAMES) expect(text).toMatch(new RegExp(`^edgeq_limiter_binding\\{signal="${s}"\\} [01]$`, 'm'));
  });

  it('the gateway\'s signal source reads the real cell: fsync p99 from the brokers, under-replicated partitions once a broker stops', async () => {
    const signals = new GatewayLoadSignals({ cell: gw.client.admin(), intervalMs: 200 });
    try {
      signals.start();
      const first = await eventually(() => Number.isFinite(signals.read().underReplicatedPartitions), SETTLE_MS_MAX, 'a first cell poll').then(() => signals.read());
      expect(first.underReplicatedPartitions).toBe(0);
      expect(first.fsyncP99Ms).toBeGreaterThanOrEqual(0);
      expect(first.rssMb).toBeGreaterThan(0);
      const victim = gw.cell.leaderOf(TOPIC, 0) === 3 ? 2 : 3;
      await gw.cell.stopBroker(victim);
      let shrinks = 0;
      await eventually(() => {
        const s = signals.read();
        shrinks += Number.isFinite(s.isrShrinks) ? s.isrShrinks! : 0;
        return (s.underReplicatedPartitions ?? 0) >= 1 && shrinks >= 1;
      }, SETTLE_MS_MAX, 'the stopped broker to leave the ISRs');
    } finally {
      signals.close();
    }
  }, 60_000);
});
