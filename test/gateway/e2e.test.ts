// Proves the whole local deployment end to end over real HTTP: through `edgeq dev`'s gateway a
// topic is created and written with acks=all, as JSON records and as protobuf batches from
// concurrent clients (which the gateway merges while one batch is in flight); the partition
// leader's broker (its pid read from /v1/cell) is SIGKILLed while writes continue; every
// acknowledged record reads back exactly once; and after stopping and restarting the deployment
// everything reads back again.
import { afterAll, describe, expect, it } from 'vitest';
import { buildBatch } from '../../src/log/index.ts';
import { Acks, encodeMessage } from '../../src/protocol/index.ts';
import { eventually } from '../helpers/cell.ts';
import { freeRange, startDev, stopAllDevs } from '../helpers/dev-process.ts';
import { cleanupTempDirs, tempDir } from '../helpers/tmp.ts';

afterAll(async () => {
  await stopAllDevs();
  await cleanupTempDirs();
});

interface CellView {
  brokers: { id: number; pid: number; alive: boolean }[];
  partitions: { topic: string; partition: number; leaderId: number }[];
}

async function json<T>(res: Response): Promise<T> {
  return (await res.json()) as T;
}

async function readAll(gateway: string, expected: number): Promise<Map<number, string>> {
  const out = new Map<number, string>();
  let offset = 0;
  const deadline = Date.now() + 30_000;
  while (out.size < expected && Date.now() < deadline) {
    const res = await fetch(`${gateway}/v1/topics/e2e/partitions/0/records?offset=${offset}&maxRecords=500&waitMs=500`);
    if (res.status !== 200) {
      await new Promise((r) => setTimeout(r, 100)); // a leader change in progress: ask again
      continue;
    }
    const body = await json<{ records: { offset: number; value: string }[]; nextOffset: number }>(res);
    for (const r of body.records) {
      expect(out.has(r.offset)).toBe(false);
      out.set(r.offset, r.value);
    }
    offset = body.nextOffset;
  }
  return out;
}

describe('gateway end to end', () => {
  it('keeps every acknowledged record across a leader SIGKILL and a full restart', async () => {
    const dataDir = await tempDir('edgeq-e2e-');
    const base = await freeRange(10);
    let dev = startDev(dataDir, base, base + 3, base + 4);
    let ready = await dev.ready;
    const gw = ready.gateway;
    const acked = new Map<number, string>();
    try {
      const created = await fetch(`${gw}/v1/topics`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'e2e', partitions: 1, replicationFactor: 3, config: { 'min.insync.replicas': '2' } }),
      });
      expect(created.status).toBe(201);
      let n = 0;
      const produce = async () => {
        const value = `e${n++}`;
        const res = await fetch(`${gw}/v1/topics/e2e/records?acks=all`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ records: [{ value, partition: 0 }] }),
        });
        if (res.status !== 200) return false; // refused (e.g. during failover): not acknowledged
        const body = await json<{ offsets: { offset: number }[] }>(res);
        acked.set(body.offsets[0]!.offset, value);
        return true;
      };
      // Protobuf batches of 5 records from concurrent clients: while one is in flight, the ones
      // queued behind it go out merged, and merged batches are retried through the failover.
      let stopBatches = false;
      let batchesAcked = 0;
      const batchClient = async (client: number) => {
        for (let i = 0; !stopBatches && i < 2_000; i++) {
          const values = Array.from({ length: 5 }, (_, j) => `p${client}-${i}-${j}`);
          const body = encodeMessage('ProduceRequest', { acks: Acks.ALL, timeoutMs: 30_000, topics: [{ name: 'e2e', partitions: [{ partition: 0, records: await buildBatch(values.map((value) => ({ value }))) }] }] });
          const res = await fetch(`${gw}/v1/topics/e2e/records?acks=all`, { method: 'POST', headers: { 'content-type': 'application/x-protobuf' }, body: new Uint8Array(body) }).catch(() => null);
          if (res?.status !== 200) {
            await res?.arrayBuffer();
            await new Promise((r) => setTimeout(r, 100));
            continue;
          }
          const { offsets } = await json<{ offsets: { offset: number }[] }>(res);
          offsets.forEach((o, j) => acked.set(o.offset, values[j]!));
          batchesAcked++;
        }
      };
      const batchClients = Array.from({ length: 4 }, (_, k) => batchClient(k));
      for (let i = 0; i < 30; i++) await produce();
      const cell = await json<CellView>(await fetch(`${gw}/v1/cell`));
      const leader = cell.partitions.find((p) => p.topic === 'e2e')!.leaderId;
      const pid = cell.brokers.find((b) => b.id === leader)!.pid;
      const batchesAtKill = batchesAcked;
      process.kill(pid, 'SIGKILL');
      // Keep producing through the failover until 30 more are acknowledged (bounded).
      let jsonAfterKill = 0;
      const deadline = Date.now() + 60_000;
      while ((jsonAfterKill < 30 || batchesAcked <= batchesAtKill) && Date.now() < deadline) {
        if (await produce()) jsonAfterKill++;
        else await new Promise((r) => setTimeout(r, 100));
      }
      const batchesBeforeStop = batchesAcked;
      stopBatches = true;
      await Promise.all(batchClients);
      expect(jsonAfterKill).toBeGreaterThanOrEqual(30);
      expect(batchesAtKill).toBeGreaterThan(0);
      expect(batchesBeforeStop).toBeGreaterThan(batchesAtKill);
      const got = await readAll(gw, acked.size);
      for (const [off, v] of acked) expect(got.get(off), `offset ${off}`).toBe(v);
      expect(new Set(got.values()).size).toBe(got.size);
    } finally {
      dev.child.kill('SIGTERM');
      await dev.exited;
    }
    // A full restart on the same folder: everything is still there.
    dev = startDev(dataDir, base, base + 3, base + 4);
    ready = await dev.ready;
    try {
      await eventually(async () => (await fetch(`${ready.gateway}/readyz`)).status === 200, 30_000, 'the deployment to be ready');
      const got = await readAll(ready.gateway, acked.size);
      for (const [off, v] of acked) expect(got.get(off), `offset ${off} after restart`).toBe(v);
    } finally {
      dev.child.kill('SIGTERM');
      await dev.exited;
    }
  }, 240_000);
});
