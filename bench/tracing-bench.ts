/**
 * What tracing costs on the produce path (`npm run bench:tracing` → bench/results/tracing.json):
 * produce throughput through the gateway of a one-region `edgeq dev` (3 brokers, a topic of 3
 * partitions with replication factor 3, acks=all, one JSON record per request, autocannon with
 * CONNECTIONS keep-alive connections, the admission limiter off) with tracing off, on with nothing
 * sampled (0%: what being on costs by itself), on at 1% sampling (the target: within 5% of off),
 * and on at 100% (for information), exporting over OTLP/HTTP to a receiver in this process
 * (test/tracing/otlp-receiver.ts, counting only) that proves the spans arrived.
 *
 * The modes alternate (off, 0%, 1%, 100%, off, …) for ROUNDS rounds, each run on a fresh
 * deployment (tracing is configured at process start), a WARMUP_SECONDS warm-up then a SECONDS
 * measured run; the figure per mode is the median over its rounds, and the ratio is median(on) /
 * median(off). Next to req/s, the CPU ms per request of the gateway and of the brokers (utime +
 * stime from /proc over the measured run, bench/lib/proc-cpu.ts). Defaults take about 4-5
 * minutes; smaller runs: BENCH_TRACE_ROUNDS, BENCH_TRACE_SECONDS, BENCH_TRACE_WARMUP_SECONDS,
 * BENCH_TRACE_CONNECTIONS, BENCH_TRACE_RATIOS (e.g. 0.01), BENCH_TRACE_EXPORT_DELAY_MS,
 * BENCH_TRACE_OUT; BENCH_TRACE_KEEP=1 keeps each run's data folder and process logs.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { alive, DEV_REGIONS_PORT_SPAN, freeRange, startDevRegions, type Ready } from '../test/helpers/dev-process.ts';
import { OtlpReceiver } from '../test/tracing/otlp-receiver.ts';
import { cannon } from './lib/autocannon.ts';
import { gatewayRequests } from './lib/gateway-requests.ts';
import { median, progress as say, sleep, waitUntil } from './lib/harness.ts';
import { cpuDeltaMs, readCpu } from './lib/proc-cpu.ts';
// @ts-expect-error: a plain JS module of the launcher, without types
import { buildIsCurrent } from '../bin/build-current.js';
import { envNumber } from './lib/env.ts';

const ROUNDS = envNumber('BENCH_TRACE_ROUNDS', 3);
const SECONDS = envNumber('BENCH_TRACE_SECONDS', 8);
const WARMUP_SECONDS = envNumber('BENCH_TRACE_WARMUP_SECONDS', 2);
const CONNECTIONS = envNumber('BENCH_TRACE_CONNECTIONS', 50);
const VALUE_BYTES = 100;
const PARTITIONS = 3;
const REPLICATION_FACTOR = 3;
const BROKERS = 3;
const TOPIC = 'bench-tracing';
/** Export interval of the processes: short, so the spans of a run arrive before its deployment stops. */
const EXPORT_DELAY_MS = envNumber('BENCH_TRACE_EXPORT_DELAY_MS', 1_000);
/** Bound on `edgeq dev` stopping after SIGTERM before it is killed. */
const STOP_MS = 20_000;
const OUT = process.env.BENCH_TRACE_OUT ? resolve(process.env.BENCH_TRACE_OUT) : new URL('./results/tracing.json', import.meta.url).pathname;
/** Target: tracing on at 1% keeps at least this share of the throughput with it off. */
const TARGET_RATIO = 0.95;

const round = (n: number, digits = 0): number => Math.round(n * 10 ** digits) / 10 ** digits;

type Mode = 'off' | 'on-1%' | 'on-100%' | `on-${number}%`;
/** BENCH_TRACE_RATIOS: the sampling ratios measured besides off (default 0,0.01,1: on with nothing sampled, the target's 1%, and every produce). */
const RATIOS = (process.env.BENCH_TRACE_RATIOS ?? '0,0.01,1').split(',').map((x) => {
  const n = Number(x);
  if (x.trim() === '' || !(n >= 0 && n <= 1)) throw new Error(`BENCH_TRACE_RATIOS: expected ratios within 0..1, got "${x}"`);
  return n;
});
const MODES: { mode: Mode; ratio: number | null }[] = [{ mode: 'off', ratio: null }, ...RATIOS.map((ratio) => ({ mode: `on-${round(ratio * 100, 2)}%` as Mode, ratio }))];

const progress = (line: string): void => say(line, 'tracing-bench');
const notes: string[] = [];

interface ModeSummary {
  medianReqPerSec: number;
  medianP99Ms: number;
  medianGatewayCpuMsPerReq: number | null;
  medianBrokersCpuMsPerReq: number | null;
  spans: number;
}

interface Run {
  mode: Mode;
  round: number;
  reqPerSec: number;
  p50Ms: number;
  p99Ms: number;
  completed: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  gatewayCpuMsPerReq: number | null;
  brokersCpuMsPerReq: number | null;
  /** Spans the receiver got from this run's deployment (warm-up and probes included). */
  spans: number;
  /** Time the receiver spent on them in this process (which also runs the load generator). */
  receiverMs: number;
  /** The deployment ran the build in dist/ (true) or the sources through tsx (another engineer's edit made the build stale). */
  fromDist: boolean;
  loadAvg1m: { start: number; end: number };
}

async function http(url: string, init: RequestInit = {}, timeoutMs = 10_000): Promise<number> {
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
  await res.arrayBuffer();
  return res.status;
}

/** Creates the topic and waits until every partition takes an acks=all write (bounded: 60 s). */
async function createTopic(gateway: string): Promise<void> {
  const status = await http(`${gateway}/v1/topics`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: TOPIC, partitions: PARTITIONS, replicationFactor: REPLICATION_FACTOR }) });
  if (status !== 201) throw new Error(`creating ${TOPIC}: ${status}`);
  const ok = await waitUntil(async () => {
    const probes = await Promise.all(
      Array.from({ length: PARTITIONS }, (_, p) =>
        http(`${gateway}/v1/topics/${TOPIC}/records?acks=all`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ records: [{ value: 'probe', partition: p }] }) }, 5_000).catch(() => 0),
      ),
    );
    return probes.every((s) => s === 200);
  }, 60_000, 200);
  if (!ok) throw new Error(`${TOPIC}: not every partition took an acks=all write within 60 s`);
}

async function runOnce(mode: Mode, ratio: number | null, roundNo: number, receiver: OtlpReceiver): Promise<Run> {
  const dir = await mkdtemp(join(tmpdir(), 'edgeq-trace-bench-'));
  const base = await freeRange(DEV_REGIONS_PORT_SPAN);
  // No admission limiter: under a loaded machine it would shed (503) part of the load, and the
  // figure is the path's throughput, not the limiter's.
  const env: Record<string, string> = ratio === null ? { EDGEQ_LIMITER: 'none' } : { EDGEQ_LIMITER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_TRACES_SAMPLER_ARG: String(ratio), OTEL_BSP_SCHEDULE_DELAY: String(EXPORT_DELAY_MS) };
  const dev = startDevRegions(dir, base, { regions: '1', brokersPerRegion: BROKERS, wanLatencyMs: 1, env });
  let ready: Ready | null = null;
  const fromDist = (buildIsCurrent as (root: URL) => boolean)(new URL('../', import.meta.url));
  const spansBefore = receiver.received;
  const receiverMsBefore = receiver.handlerMs;
  try {
    ready = await dev.ready;
    const gateway = ready.gateway;
    await createTopic(gateway);
    const { requests } = await gatewayRequests(TOPIC, 'single', 'all', { valueBytes: VALUE_BYTES, batchRecords: 1, partitions: PARTITIONS });
    const gatewayPids = ready.processes.filter((p) => p.role === 'gateway').map((p) => p.pid);
    const brokerPids = ready.processes.filter((p) => p.role === 'broker').map((p) => p.pid);
    await cannon({ url: gateway, requests, connections: CONNECTIONS, pipelining: 1, durationSec: WARMUP_SECONDS });
    const load0 = loadavg()[0]!;
    const before = [readCpu(gatewayPids), readCpu(brokerPids)];
    const run = await cannon({ url: gateway, requests, connections: CONNECTIONS, pipelining: 1, durationSec: SECONDS });
    const after = [readCpu(gatewayPids), readCpu(brokerPids)];
    const load1 = loadavg()[0]!;
    const per = (i: number) => {
      const ms = cpuDeltaMs(before[i]!, after[i]!);
      return ms === null || run.completed <= 0 ? null : round(ms / run.completed, 4);
    };
    // The last spans of the run are exported within one interval (+ the request): wait that long, bounded.
    if (ratio !== null) await sleep(Math.min(EXPORT_DELAY_MS * 2, 5_000));
    const r: Run = {
      mode,
      round: roundNo,
      reqPerSec: round(run.reqPerSec),
      p50Ms: run.p50Ms,
      p99Ms: run.p99Ms,
      completed: run.completed,
      non2xx: run.non2xx,
      errors: run.errors,
      timeouts: run.timeouts,
      gatewayCpuMsPerReq: per(0),
      brokersCpuMsPerReq: per(1),
      spans: receiver.received - spansBefore,
      receiverMs: round(receiver.handlerMs - receiverMsBefore, 1),
      fromDist,
      loadAvg1m: { start: round(load0, 2), end: round(load1, 2) },
    };
    progress(`${mode} round ${roundNo}: ${r.reqPerSec.toLocaleString('en-US')} req/s, p99 ${r.p99Ms} ms, CPU ms/req gateway ${r.gatewayCpuMsPerReq ?? '?'} brokers ${r.brokersCpuMsPerReq ?? '?'}, ${r.spans} spans (receiver ${r.receiverMs} ms), load ${r.loadAvg1m.start}→${r.loadAvg1m.end}${r.non2xx + r.errors + r.timeouts > 0 ? ` — ${r.non2xx} non-2xx, ${r.errors} errors, ${r.timeouts} timeouts` : ''}`);
    return r;
  } finally {
    if (dev.child.exitCode === null && dev.child.signalCode === null) {
      dev.child.kill('SIGTERM');
      const code = await Promise.race([dev.exited, sleep(STOP_MS).then(() => 'timeout' as const)]);
      if (code === 'timeout') {
        notes.push(`${mode} round ${roundNo}: edgeq dev did not exit within ${STOP_MS / 1000} s of SIGTERM; killed`);
        dev.child.kill('SIGKILL');
      }
    }
    for (const p of ready?.processes ?? []) if (alive(p.pid)) process.kill(p.pid, 'SIGKILL');
    // BENCH_TRACE_KEEP=1 keeps each run's data folder (and its process logs) for a look afterwards.
    if (process.env.BENCH_TRACE_KEEP === '1') progress(`kept ${dir}`);
    else await rm(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const startedMs = Date.now();
  // Counting only: the receiver shares this process with the load generator.
  const receiver = await OtlpReceiver.start({ store: false });
  const runs: Run[] = [];
  try {
    for (let r = 1; r <= ROUNDS; r++) {
      for (const m of MODES) runs.push(await runOnce(m.mode, m.ratio, r, receiver));
    }
  } finally {
    await receiver.close();
  }
  const summary = Object.fromEntries(
    MODES.map(({ mode }) => {
      const mine = runs.filter((x) => x.mode === mode);
      const med = (f: (x: Run) => number | null) => {
        const v = mine.map(f).filter((x): x is number => x !== null);
        return v.length === 0 ? null : round(median(v), 4);
      };
      return [mode, { medianReqPerSec: med((x) => x.reqPerSec), medianP99Ms: med((x) => x.p99Ms), medianGatewayCpuMsPerReq: med((x) => x.gatewayCpuMsPerReq), medianBrokersCpuMsPerReq: med((x) => x.brokersCpuMsPerReq), spans: mine.reduce((n, x) => n + x.spans, 0) }];
    }),
  ) as Partial<Record<Mode, ModeSummary>>;
  const off = summary.off!;
  const ratio = (mode: Mode): number | null => (summary[mode] ? round(summary[mode]!.medianReqPerSec / off.medianReqPerSec, 4) : null);
  const cpuRatio = (mode: Mode): number | null => {
    if (!summary[mode]) return null;
    const cpu = (m: Mode) => (summary[m]!.medianGatewayCpuMsPerReq ?? NaN) + (summary[m]!.medianBrokersCpuMsPerReq ?? NaN);
    const v = cpu(mode) / cpu('off');
    return Number.isFinite(v) ? round(v, 4) : null;
  };
  if (runs.some((x) => !x.fromDist) && runs.some((x) => x.fromDist)) notes.push('some runs ran the build in dist/, others the sources (a source changed during the benchmark): the modes are not compared on equal code');
  // Valid: every request answered 2xx, no span with tracing off, spans from every sampled mode (the exporter really ran).
  const valid = runs.every((x) => x.non2xx + x.errors + x.timeouts === 0) && off.spans === 0 && MODES.every((m) => m.ratio === null || m.ratio === 0 || summary[m.mode]!.spans > 0);
  if (off.spans !== 0) notes.push(`tracing off, yet ${off.spans} spans arrived`);
  const result = {
    bench: 'tracing',
    date: new Date().toISOString(),
    durationSec: Math.round((Date.now() - startedMs) / 1000),
    machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? 'unknown', node: process.version },
    setup: {
      deployment: `edgeq dev, 1 region, ${BROKERS} brokers, fresh per run, admission limiter off (EDGEQ_LIMITER=none)`,
      topic: `${PARTITIONS} partitions, replication factor ${REPLICATION_FACTOR}`,
      request: `POST /v1/topics/${TOPIC}/records?acks=all, application/json, 1 record of ${VALUE_BYTES} B`,
      loadGenerator: `autocannon 9.0.0 in the bench process, ${CONNECTIONS} connections, ${WARMUP_SECONDS} s warm-up + ${SECONDS} s measured`,
      exporter: `OTLP/HTTP JSON to a receiver in the bench process, export every ${EXPORT_DELAY_MS} ms`,
      rounds: ROUNDS,
      order: MODES.map((m) => m.mode).join(' → ') + ', repeated',
    },
    target: { onePercentVsOffMin: TARGET_RATIO },
    summary,
    ratios: {
      onePercentVsOff: ratio('on-1%'),
      hundredPercentVsOff: ratio('on-100%'),
      cpuPerRequestOnePercentVsOff: cpuRatio('on-1%'),
      cpuPerRequestHundredPercentVsOff: cpuRatio('on-100%'),
      byMode: Object.fromEntries(MODES.filter((m) => m.ratio !== null).map((m) => [m.mode, { reqPerSecVsOff: ratio(m.mode), cpuPerRequestVsOff: cpuRatio(m.mode) }])),
    },
    met: valid && (ratio('on-1%') ?? 0) >= TARGET_RATIO,
    valid,
    runs,
    notes,
  };
  await mkdir(dirname(OUT), { recursive: true });
  await writeFile(OUT, `${JSON.stringify(result, null, 2)}\n`);
  const line = (m: Mode) => {
    const x = summary[m]!;
    return `| ${m} | ${x.medianReqPerSec.toLocaleString('en-US')} | ${m === 'off' ? 1 : ratio(m)} | ${x.medianP99Ms} | ${x.medianGatewayCpuMsPerReq ?? '?'} | ${x.medianBrokersCpuMsPerReq ?? '?'} | ${x.spans} |`;
  };
  process.stdout.write(
    [
      `tracing cost, median of ${ROUNDS} alternating rounds (${OUT})`,
      '| tracing | req/s | vs off | p99 ms | CPU ms/req gateway | CPU ms/req brokers | spans |',
      '|---|---:|---:|---:|---:|---:|---:|',
      ...MODES.map((m) => line(m.mode)),
      `1% vs off: ${ratio('on-1%')} (target >= ${TARGET_RATIO}): ${result.met ? 'met' : 'not met'}${valid ? '' : ' (not a valid run: see notes and runs)'}`,
      '',
    ].join('\n'),
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
