/**
 * One gateway case against a fresh local deployment, for finding where the time goes
 * (`npm run profile:gateway`). A diagnostic, not the benchmark: `npm run bench:gateway` measures
 * every case against its ceilings; this runs one case right after start-up, with nothing before
 * it unless asked, and reports what the benchmark does not: CPU ms per request of each process
 * separately, and the brokers' produce requests, stored batches and replica fetch responses per
 * HTTP request over the measured run (from their /metrics). It can also run another load first
 * and write CPU profiles of every process.
 *
 * Settings (environment):
 * - GW_ONE_CASE: single | json100 | protobuf100 (default protobuf100); GW_ONE_ACKS: 1 | all;
 *   GW_ONE_SECONDS (default 8; a 2 s warm-up runs first, not measured).
 * - GW_ONE_BEFORE: single | json100 — run that load for GW_ONE_BEFORE_SECONDS (default 24) first,
 *   to the same topic (or another one with GW_ONE_BEFORE_TOPIC=1).
 * - GW_ONE_IDLE_SECONDS: leave the deployment idle this long before the warm-up (the benchmark's
 *   ceilings run for ~25 s between its cases).
 * - GW_ONE_PROFILE_DIR: write a V8 CPU profile of every process of the deployment there (they
 *   are written when it stops); GW_ONE_NODE_ARGS: other Node flags for those processes.
 *
 * Prints one JSON line with the figures; writes nothing into the repository.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freeRange, startDev } from '../test/helpers/dev-process.ts';
import { cannon, type CannonRequest } from './lib/autocannon.ts';
import { gatewayRequests } from './lib/gateway-requests.ts';
import { progress as say, waitUntil } from './lib/harness.ts';
import { cpuDeltaMs, readCpu } from './lib/proc-cpu.ts';

const CASES = ['single', 'json100', 'protobuf100'] as const;
type CaseName = (typeof CASES)[number];
const oneOf = <T extends string>(name: string, allowed: readonly T[], fallback: T): T => {
  const v = process.env[name] ?? fallback;
  if (!allowed.includes(v as T)) throw new Error(`${name}: expected one of ${allowed.join(', ')}, got "${v}"`);
  return v as T;
};
const seconds = (name: string, fallback: number): number => {
  const n = Number(process.env[name] ?? fallback);
  if (!Number.isFinite(n) || n <= 0 || n > 600) throw new Error(`${name}: expected seconds in (0, 600], got "${process.env[name]}"`);
  return n;
};

const CASE = oneOf('GW_ONE_CASE', CASES, 'protobuf100');
const ACKS = oneOf('GW_ONE_ACKS', ['1', 'all'] as const, '1');
const SECONDS = seconds('GW_ONE_SECONDS', 8);
const BEFORE = process.env.GW_ONE_BEFORE ? oneOf('GW_ONE_BEFORE', ['single', 'json100'] as const, 'single') : null;
const BEFORE_SECONDS = seconds('GW_ONE_BEFORE_SECONDS', 24);
const IDLE_SECONDS = process.env.GW_ONE_IDLE_SECONDS ? seconds('GW_ONE_IDLE_SECONDS', 25) : 0;
const CONNECTIONS = 50;
const progress = (line: string): void => say(line, 'gateway-one');

const nodeArgs = [process.env.GW_ONE_PROFILE_DIR ? `--cpu-prof --cpu-prof-dir=${process.env.GW_ONE_PROFILE_DIR}` : '', process.env.GW_ONE_NODE_ARGS ?? ''].join(' ').trim();

async function json(url: string, init: RequestInit = {}): Promise<number> {
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(10_000) });
  await res.arrayBuffer();
  return res.status;
}

async function createTopic(gateway: string, name: string): Promise<void> {
  const status = await json(`${gateway}/v1/topics`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name, partitions: 3, replicationFactor: 3 }) });
  if (status !== 201) throw new Error(`creating topic ${name}: ${status}`);
  if (!(await waitUntil(async () => (await json(`${gateway}/readyz`)) === 200, 30_000, 100))) throw new Error('no leaders 30 s after creating the topic');
}

/** The benchmark's requests for `c` (100 B values, 100-record batches, 3 partitions). */
async function requestsFor(topic: string, c: CaseName): Promise<CannonRequest[]> {
  return (await gatewayRequests(topic, c, ACKS, { valueBytes: 100, batchRecords: 100, partitions: 3 })).requests;
}

const COUNTERS = ['edgeq_produce_latency_seconds_count', 'edgeq_log_append_batches_total', 'edgeq_fetch_responses_total'] as const;

/** The brokers' counters that say how requests batch, summed over the brokers (replica fetches only). */
async function counters(metricsUrls: readonly string[]): Promise<Record<(typeof COUNTERS)[number], number>> {
  const out = Object.fromEntries(COUNTERS.map((c) => [c, 0])) as Record<(typeof COUNTERS)[number], number>;
  for (const url of metricsUrls) {
    const text = await (await fetch(url, { signal: AbortSignal.timeout(10_000) })).text();
    for (const line of text.split('\n')) {
      const m = /^([a-z_]+)\{([^}]*)\} (\S+)$/.exec(line);
      if (!m || !(COUNTERS as readonly string[]).includes(m[1]!)) continue;
      if (m[1] === 'edgeq_fetch_responses_total' && !m[2]!.includes('replica="true"')) continue;
      out[m[1] as (typeof COUNTERS)[number]] += Number(m[3]);
    }
  }
  return out;
}

/** Garbage collections per kind (count, seconds) of the process behind each /metrics URL. */
async function gcStats(metricsUrls: readonly string[]): Promise<Record<string, number>[]> {
  return Promise.all(
    metricsUrls.map(async (url) => {
      const text = await (await fetch(url, { signal: AbortSignal.timeout(10_000) })).text();
      const out: Record<string, number> = {};
      for (const m of text.matchAll(/^nodejs_gc_duration_seconds_(count|sum)\{[^}]*kind="(\w+)"[^}]*\} (\S+)$/gm)) out[`${m[2]}${m[1] === 'count' ? 'Count' : 'Sec'}`] = Number(m[3]);
      return out;
    }),
  );
}

const dir = await mkdtemp(join(tmpdir(), 'edgeq-gw-one-'));
const base = await freeRange(12);
if (nodeArgs) process.env.EDGEQ_CHILD_NODE_ARGS = nodeArgs;
const dev = startDev(dir, base, base + 9, base + 10);
try {
  const ready = await dev.ready;
  delete process.env.EDGEQ_CHILD_NODE_ARGS;
  const gateway = ready.gateway;
  await createTopic(gateway, 'one');
  const requests = await requestsFor('one', CASE);
  for (const r of requests) {
    const status = await json(`${gateway}${r.path}`, { method: 'POST', headers: r.headers, body: r.body! });
    if (status !== 200) throw new Error(`${CASE}: the gateway answered ${status}`);
  }
  if (BEFORE) {
    const topic = process.env.GW_ONE_BEFORE_TOPIC ? 'before' : 'one';
    if (topic !== 'one') await createTopic(gateway, topic);
    const before = await cannon({ url: gateway, requests: await requestsFor(topic, BEFORE), connections: CONNECTIONS, pipelining: 1, durationSec: BEFORE_SECONDS });
    progress(`before: ${BEFORE} to topic ${topic} for ${BEFORE_SECONDS} s, ${Math.round(before.reqPerSec)} req/s`);
  }
  if (IDLE_SECONDS > 0) await new Promise((r) => setTimeout(r, IDLE_SECONDS * 1000));
  await cannon({ url: gateway, requests, connections: CONNECTIONS, pipelining: 1, durationSec: 2 });
  const processes = ready.processes.filter((p) => p.name === 'gateway' || p.name.startsWith('broker-'));
  const gcUrls = [`${gateway}/metrics`, ...ready.metrics];
  const gc0 = await gcStats(gcUrls);
  const c0 = await counters(ready.metrics);
  const cpu0 = processes.map((p) => readCpu([p.pid]));
  const run = await cannon({ url: gateway, requests, connections: CONNECTIONS, pipelining: 1, durationSec: SECONDS });
  const cpu1 = processes.map((p) => readCpu([p.pid]));
  const c1 = await counters(ready.metrics);
  const gc1 = await gcStats(gcUrls);
  const per = (n: number) => (run.completed > 0 ? Math.round((n / run.completed) * 1000) / 1000 : null);
  const result = {
    case: CASE,
    acks: ACKS,
    before: BEFORE ? { case: BEFORE, seconds: BEFORE_SECONDS, otherTopic: Boolean(process.env.GW_ONE_BEFORE_TOPIC) } : null,
    idleSeconds: IDLE_SECONDS,
    nodeArgs: nodeArgs || null,
    reqPerSec: Math.round(run.reqPerSec),
    p99Ms: run.p99Ms,
    bad: run.non2xx + run.errors + run.timeouts,
    cpuMsPerReq: Object.fromEntries(processes.map((p, i) => [p.name, per(cpuDeltaMs(cpu0[i]!, cpu1[i]!) ?? NaN)])),
    // GC over the measured run: per process (gateway, then the brokers in /metrics order), per kind.
    gcDuringRun: gc1.map((after, i) =>
      Object.fromEntries(Object.entries(after).map(([k, v]) => [k, Math.round((v - (gc0[i]?.[k] ?? 0)) * 1000) / 1000])),
    ),
    perHttpRequest: {
      produceRequests: per(c1.edgeq_produce_latency_seconds_count - c0.edgeq_produce_latency_seconds_count),
      storedBatches: per(c1.edgeq_log_append_batches_total - c0.edgeq_log_append_batches_total),
      replicaFetchResponses: per(c1.edgeq_fetch_responses_total - c0.edgeq_fetch_responses_total),
    },
  };
  console.log(JSON.stringify(result));
} finally {
  dev.child.kill('SIGTERM');
  await dev.exited;
  await rm(dir, { recursive: true, force: true });
}
