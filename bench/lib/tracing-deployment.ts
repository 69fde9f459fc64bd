/**
 * One `edgeq dev` region for the tracing bench (3 brokers, the bench topic of 3 partitions with
 * replication factor 3, the admission limiter off), started with the given environment and
 * stopped whole: what the separate-deployment runs and the interleaved part both need.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { alive, DEV_REGIONS_PORT_SPAN, freeRange, startDevRegions, type Ready } from '../../test/helpers/dev-process.ts';
import type { CannonRequest } from './autocannon.ts';
import { gatewayRequests } from './gateway-requests.ts';
import { sleep, waitUntil } from './harness.ts';

export const BENCH_TOPIC = 'bench-tracing';
export const VALUE_BYTES = 100;
export const PARTITIONS = 3;
export const REPLICATION_FACTOR = 3;
export const BROKERS = 3;
/** Bound on `edgeq dev` stopping after SIGTERM before it is killed. */
const STOP_MS = 20_000;
/** Bound on every partition taking an acks=all write after the topic is made. */
const TOPIC_READY_MS = 60_000;

export interface TracingDeployment {
  gateway: string;
  gatewayPids: number[];
  brokerPids: number[];
  /** The brokers' /metrics URLs. */
  brokerMetrics: string[];
  /** The produce requests the load generator loops over. */
  requests: CannonRequest[];
  dir: string;
  /** Stops every process; keeps the data folder (and logs) when `keep`. Notes what went wrong. */
  stop(keep: boolean): Promise<string | null>;
}

async function http(url: string, init: RequestInit = {}, timeoutMs = 10_000): Promise<number> {
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
  await res.arrayBuffer();
  return res.status;
}

/** Creates the topic and waits until every partition takes an acks=all write (bounded). */
async function createTopic(gateway: string): Promise<void> {
  const status = await http(`${gateway}/v1/topics`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: BENCH_TOPIC, partitions: PARTITIONS, replicationFactor: REPLICATION_FACTOR }) });
  if (status !== 201) throw new Error(`creating ${BENCH_TOPIC}: ${status}`);
  const ok = await waitUntil(async () => {
    const probes = await Promise.all(
      Array.from({ length: PARTITIONS }, (_, p) =>
        http(`${gateway}/v1/topics/${BENCH_TOPIC}/records?acks=all`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ records: [{ value: 'probe', partition: p }] }) }, 5_000).catch(() => 0),
      ),
    );
    return probes.every((s) => s === 200);
  }, TOPIC_READY_MS, 200);
  if (!ok) throw new Error(`${BENCH_TOPIC}: not every partition took an acks=all write within ${TOPIC_READY_MS / 1000} s`);
}

/** Starts a deployment with `env` (the tracing variables, or none for off) and makes the topic. */
export async function startTracingDeployment(env: Record<string, string>): Promise<TracingDeployment> {
  const dir = await mkdtemp(join(tmpdir(), 'edgeq-trace-bench-'));
  const base = await freeRange(DEV_REGIONS_PORT_SPAN);
  // No admission limiter: under a loaded machine it would shed (503) part of the load, and the
  // figure is the path's throughput, not the limiter's.
  const dev = startDevRegions(dir, base, { regions: '1', brokersPerRegion: BROKERS, wanLatencyMs: 1, env: { EDGEQ_LIMITER: 'none', ...env } });
  let ready: Ready | null = null;
  const stop = async (keep: boolean): Promise<string | null> => {
    let note: string | null = null;
    if (dev.child.exitCode === null && dev.child.signalCode === null) {
      dev.child.kill('SIGTERM');
      const code = await Promise.race([dev.exited, sleep(STOP_MS).then(() => 'timeout' as const)]);
      if (code === 'timeout') {
        note = `edgeq dev did not exit within ${STOP_MS / 1000} s of SIGTERM; killed`;
        dev.child.kill('SIGKILL');
      }
    }
    for (const p of ready?.processes ?? []) if (alive(p.pid)) process.kill(p.pid, 'SIGKILL');
    if (!keep) await rm(dir, { recursive: true, force: true });
    return note;
  };
  try {
    ready = await dev.ready;
    await createTopic(ready.gateway);
    const { requests } = await gatewayRequests(BENCH_TOPIC, 'single', 'all', { valueBytes: VALUE_BYTES, batchRecords: 1, partitions: PARTITIONS });
    return {
      gateway: ready.gateway,
      gatewayPids: ready.processes.filter((p) => p.role === 'gateway').map((p) => p.pid),
      brokerPids: ready.processes.filter((p) => p.role === 'broker').map((p) => p.pid),
      brokerMetrics: ready.metrics,
      requests,
      dir,
      stop,
    };
  } catch (err) {
    await stop(false);
    throw err;
  }
}

/** Sets the gateway's sampling ratio at run time (PUT /v1/tracing) and checks it took. */
export async function setSampleRatio(gateway: string, ratio: number): Promise<void> {
  const res = await fetch(`${gateway}/v1/tracing`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ sampleRatio: ratio }), signal: AbortSignal.timeout(10_000) });
  const body = (await res.json()) as { sampleRatio?: number };
  if (res.status !== 200 || body.sampleRatio !== ratio) throw new Error(`PUT /v1/tracing {sampleRatio: ${ratio}} answered ${res.status} ${JSON.stringify(body)}`);
}
