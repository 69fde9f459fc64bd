// Proves with real processes (an embedded arbiter and a cell of 3 `edgeq broker` processes with admin ports) what the Kubernetes manifests rely on: a broker's admin /readyz is 200 once it is in the ISR of every partition it replicates and 503 naming the reason while its lease cannot be renewed (arbiter frozen), /healthz answers meanwhile; and `edgeq handoff` (the broker's preStop) moves every leadership of a broker to other ISR members in a new epoch while the broker keeps running, with no acknowledged record lost, after which the broker is back in every ISR and ready.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { createClient, type CellStatus } from '../../src/client/index.ts';
import { serviceNodeFlags } from '../../src/cli/supervisor.ts';
import { spawnArbiter, type ArbiterProcess } from '../helpers/arbiter-process.ts';
import { spawnBroker, type BrokerProcess } from '../helpers/broker-process.ts';
import { freePort } from '../helpers/ports.ts';
import { cleanupTempDirs, tempDir } from '../helpers/tmp.ts';
import { waitFor } from '../../src/testing/index.ts';

const run = promisify(execFile);
const BIN = fileURLToPath(new URL('../../bin/edgeq.js', import.meta.url));

const procs: (BrokerProcess | ArbiterProcess)[] = [];
afterAll(async () => {
  for (const p of procs) p.child.kill('SIGCONT');
  await Promise.all(procs.map((p) => p.kill('SIGKILL')));
  await cleanupTempDirs();
});

const LEASE_TTL_MS = 2_000;
/**
 * Slack for a loaded 2-core machine (process scheduling, GC, other test files beside this one).
 */
const LOADED_MACHINE_MS = 10_000;
/**
 * A broker stops claiming it may lead TTL/4 before its lease could run out counted from the last
 * renewal sent (docs/cell.md), renewals go every TTL/4: at most TTL - TTL/4 + TTL/4 = TTL after
 * the arbiter froze, plus the readiness probe's poll.
 */
const NOT_READY_MS_MAX = LEASE_TTL_MS + LOADED_MACHINE_MS;
/** After the arbiter thaws: leases found expired are granted again and the watch catches up. */
const READY_AGAIN_MS_MAX = 30_000;
const PARTITIONS = 6;

interface Readyz {
  ready: boolean;
  reasons: string[];
  replicas: number;
  notInIsr: number;
}

async function readyz(adminPort: number): Promise<{ status: number; body: Readyz }> {
  const res = await fetch(`http://127.0.0.1:${adminPort}/readyz`, { signal: AbortSignal.timeout(5_000) });
  return { status: res.status, body: (await res.json()) as Readyz };
}

describe('broker readiness and leadership handoff', () => {
  it('readyz follows the ISR and the lease; edgeq handoff moves leaderships without losing a record', async () => {
    const arbiter = await spawnArbiter({ dataDir: await tempDir('edgeq-ops-arbiter-') });
    procs.push(arbiter);
    const endpoint = `127.0.0.1:${arbiter.port}`;
    const admin = new Map<number, number>();
    const brokers = await Promise.all(
      [1, 2, 3].map(async (id) => {
        const adminPort = await freePort();
        admin.set(id, adminPort);
        const b = await spawnBroker({
          dataDir: await tempDir(`edgeq-ops-${id}-`),
          id,
          args: ['--arbiter', 'embedded', '--arbiter-endpoints', endpoint, '--cell-id', 'ops', '--admin-port', String(adminPort)],
          env: { EDGEQ_CELL__LEASE_TTL_MS: String(LEASE_TTL_MS), EDGEQ_CELL__SIZE: '3', EDGEQ_CELL__REPLICA_LAG_TIME_MAX_MS: '3000' },
        });
        procs.push(b);
        return b;
      }),
    );
    const client = createClient({ brokers: brokers.map((b) => `127.0.0.1:${b.port}`) });
    try {
      await client.admin().createTopics([{ name: 'ops', partitions: PARTITIONS, replicationFactor: 3 }]);
      // Every broker replicates all 6 partitions (and __consumer_offsets): ready once in every ISR.
      for (const [id, port] of admin) {
        const r = await waitFor(`broker ${id} ready`, 30_000, async () => {
          const a = await readyz(port);
          return a.status === 200 && a.body.replicas >= PARTITIONS ? a : undefined;
        }, 100);
        expect(r.body).toMatchObject({ ready: true, reasons: [], notInIsr: 0 });
        expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
      }

      // Records acknowledged by the whole ISR before the handoff.
      const producer = client.producer({ acks: 'all' });
      const before = Array.from({ length: 60 }, (_, i) => ({ key: `k${i}`, value: `before-${i}` }));
      await producer.send('ops', before);

      const status = async (): Promise<CellStatus> => client.admin().cellStatus();
      const s0 = await status();
      const ops0 = s0.partitions.filter((p) => p.topic === 'ops');
      // The broker leading the most partitions hands them off.
      const counts = new Map<number, number>();
      for (const p of ops0) counts.set(p.leaderId, (counts.get(p.leaderId) ?? 0) + 1);
      const [leaving] = [...counts].sort((a, b) => b[1] - a[1])[0]!;
      const ledBefore = s0.partitions.filter((p) => p.leaderId === leaving);
      expect(ledBefore.length).toBeGreaterThan(0);

      const out = await run(process.execPath, [...serviceNodeFlags, BIN, 'handoff', '--broker-id', String(leaving), '--arbiter', 'embedded', '--arbiter-endpoints', endpoint, '--cell-id', 'ops', '--wait-ms', '20000'], {
        env: { ...process.env, EDGEQ_LOG_LEVEL: 'warn' },
        timeout: 60_000,
      });
      const report = JSON.parse(out.stdout.trim()) as { led: string[]; handedOff: { partition: string; newLeader: number; epoch: number }[]; kept: unknown[]; complete: boolean };
      expect(report.complete).toBe(true);
      expect(report.kept).toEqual([]);
      expect(report.led.sort()).toEqual(ledBefore.map((p) => `${p.topic}/${p.partition}`).sort());
      expect(report.handedOff.map((h) => h.partition).sort()).toEqual(report.led);
      for (const h of report.handedOff) {
        expect(h.newLeader).not.toBe(leaving);
        expect(h.newLeader).toBeGreaterThan(0);
        const was = ledBefore.find((p) => `${p.topic}/${p.partition}` === h.partition)!;
        expect(h.epoch).toBeGreaterThan(was.leaderEpoch);
      }
      // The broker still runs (a follower now): it was not stopped, it only gave up leading.
      expect(brokers.find((b) => b === brokers[leaving - 1])!.child.exitCode).toBeNull();

      // Writes go on through the new leaders; nothing acknowledged before is lost.
      const after = Array.from({ length: 60 }, (_, i) => ({ key: `k${i}`, value: `after-${i}` }));
      await producer.send('ops', after);
      const s1 = await status();
      expect(s1.partitions.filter((p) => p.leaderId === leaving && p.topic === 'ops')).toEqual([]);
      const consumer = client.consumer({ fromBeginning: true });
      consumer.assign(Array.from({ length: PARTITIONS }, (_, partition) => ({ topic: 'ops', partition })));
      const seen = new Set<string>();
      const deadline = Date.now() + 30_000;
      for await (const rec of consumer) {
        seen.add(rec.value!.toString());
        if (seen.size === before.length + after.length || Date.now() > deadline) break;
      }
      await consumer.close();
      expect([...before, ...after].filter((r) => !seen.has(r.value))).toEqual([]);

      // The broker that handed off is taken back into every ISR and is ready again.
      await waitFor(`broker ${leaving} back in every ISR and ready`, 30_000, async () => {
        const st = await status();
        const inAll = st.partitions.every((p) => !p.replicas.includes(leaving) || p.isr.includes(leaving));
        return inAll && (await readyz(admin.get(leaving)!)).status === 200 ? true : undefined;
      }, 100);
      await producer.close();

      // Arbiter frozen: no broker can renew its lease, so none is ready (liveness still answers).
      arbiter.child.kill('SIGSTOP');
      const frozenAt = performance.now();
      for (const [id, port] of admin) {
        const r = await waitFor(`broker ${id} not ready with the arbiter frozen`, NOT_READY_MS_MAX, async () => {
          const a = await readyz(port);
          return a.status === 503 ? a : undefined;
        }, 50);
        expect(r.body.reasons.join(' ')).toMatch(/lease|watch/);
        expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
      }
      expect(performance.now() - frozenAt).toBeLessThan(NOT_READY_MS_MAX);
      arbiter.child.kill('SIGCONT');
      for (const [id, port] of admin) {
        await waitFor(`broker ${id} ready after the arbiter thawed`, READY_AGAIN_MS_MAX, async () => ((await readyz(port)).status === 200 ? true : undefined), 100);
      }
    } finally {
      arbiter.child.kill('SIGCONT');
      await client.close();
    }
  }, 240_000);

  it('--admin-host moves the admin endpoint to the address given (a container gives 0.0.0.0)', async () => {
    const adminPort = await freePort();
    // 127.0.0.2: another loopback address, so the test still listens on loopback only.
    const b = await spawnBroker({ dataDir: await tempDir('edgeq-ops-host-'), args: ['--admin-port', String(adminPort), '--admin-host', '127.0.0.2'] });
    procs.push(b);
    expect((await fetch(`http://127.0.0.2:${adminPort}/healthz`)).status).toBe(200);
    const lone = await fetch(`http://127.0.0.2:${adminPort}/readyz`);
    expect(lone.status).toBe(200);
    expect(((await lone.json()) as Readyz).ready).toBe(true);
    await expect(fetch(`http://127.0.0.1:${adminPort}/healthz`)).rejects.toThrow();
  }, 60_000);

  it('edgeq handoff refuses bad input with a typed error (exit 2): a broker not in the cell, a bad --wait-ms', async () => {
    const arbiter = await spawnArbiter({ dataDir: await tempDir('edgeq-ops-arbiter2-') });
    procs.push(arbiter);
    const err = await run(process.execPath, [BIN, 'handoff', '--broker-id', '7', '--arbiter', 'embedded', '--arbiter-endpoints', `127.0.0.1:${arbiter.port}`, '--cell-id', 'nobody'], { timeout: 60_000 }).then(
      () => null,
      (e: { code: number; stderr: string }) => e,
    );
    expect(err?.code).toBe(2);
    expect(err?.stderr).toMatch(/INVALID_ARGUMENT: broker 7 is not a live member of cell nobody/);
    const bad = await run(process.execPath, [BIN, 'handoff', '--broker-id', '1', '--arbiter', 'embedded', '--arbiter-endpoints', `127.0.0.1:${arbiter.port}`, '--cell-id', 'nobody', '--wait-ms', 'soon'], { timeout: 60_000 }).then(
      () => null,
      (e: { code: number; stderr: string }) => e,
    );
    expect(bad?.code).toBe(2);
    expect(bad?.stderr).toMatch(/INVALID_CONFIG: --wait-ms must be an integer/);
  }, 60_000);
});
