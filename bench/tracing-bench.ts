/**
 * What tracing costs on the produce path (`npm run bench:tracing` → bench/results/tracing.json):
 * produce throughput through the gateway of a one-region `edgeq dev` (3 brokers, a topic of 3
 * partitions with replication factor 3, acks=all, one JSON record per request, autocannon with
 * CONNECTIONS keep-alive connections, the admission limiter off) with tracing off, on with nothing
 * sampled (0%: what being on costs by itself), on at 1% sampling (the target: within 5% of off),
 * and on at 100% (for information), exporting over OTLP/HTTP to a receiver in this process
 * (test/tracing/otlp-receiver.ts, counting only) that proves the spans arrived.
 *
 * Interleaved, because this machine's throughput is not steady: the same deployment under the
 * same load gives anywhere from 6,600 to 12,300 req/s from one second to the next (CPU used
 * constant; measured while building this bench), and fresh deployments differ by ±15%, so modes
 * measured one after another on separate deployments compare noise. Each round starts three
 * deployments side by side: tracing off, tracing on (its gateway's sampling switched between 0
 * and 1% by PUT /v1/tracing) and tracing on at 100%. After a warm-up of each arm (req/s climbs
 * for ~15 s while the JIT compiles), CYCLES cycles each give every arm one WINDOW_SECONDS window,
 * in every order of the arms in turn so that no arm always follows another (the 100% arm's last
 * export lands in the next window, whichever it is). Idle deployments wait between their windows. An arm's req/s in a
 * round is its completed requests over its windows' seconds; the figure per arm is the median
 * over ROUNDS rounds (fresh deployments each) of its req/s ÷ off's in the same round. Next to it,
 * 1% ÷ 0% on the same deployment: the off and on deployments differ by a few percent even with
 * nothing sampled, and the target is judged both ways. Beside req/s,
 * the CPU ms per request of the active deployment's gateway and brokers (utime + stime
 * from /proc, bench/lib/proc-cpu.ts).
 *
 * Defaults take about 13 minutes; smaller runs: BENCH_TRACE_ROUNDS, BENCH_TRACE_CYCLES,
 * BENCH_TRACE_WINDOW_SECONDS, BENCH_TRACE_WARMUP_SECONDS, BENCH_TRACE_CONNECTIONS,
 * BENCH_TRACE_EXPORT_DELAY_MS, BENCH_TRACE_OUT; BENCH_TRACE_KEEP=1 keeps each deployment's data
 * folder and process logs.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { dirname, resolve } from 'node:path';
import { OtlpReceiver } from '../test/tracing/otlp-receiver.ts';
import { cannon } from './lib/autocannon.ts';
import { envNumber } from './lib/env.ts';
import { median, progress as say } from './lib/harness.ts';
import { cpuDeltaMs, readCpu } from './lib/proc-cpu.ts';
import { BENCH_TOPIC, BROKERS, PARTITIONS, REPLICATION_FACTOR, setSampleRatio, startTracingDeployment, VALUE_BYTES, type TracingDeployment } from './lib/tracing-deployment.ts';
// @ts-expect-error: a plain JS module of the launcher, without types
import { buildIsCurrent } from '../bin/build-current.js';

const ROUNDS = envNumber('BENCH_TRACE_ROUNDS', 3);
/** Cycles per round: 24 gives each of the 24 orders of the 4 arms once. */
const CYCLES = envNumber('BENCH_TRACE_CYCLES', 24);
const WINDOW_SECONDS = envNumber('BENCH_TRACE_WINDOW_SECONDS', 2);
/** Warm-up per arm, at the start of a round (req/s of a fresh deployment climbs for ~15 s). */
const WARMUP_SECONDS = envNumber('BENCH_TRACE_WARMUP_SECONDS', 10);
const CONNECTIONS = envNumber('BENCH_TRACE_CONNECTIONS', 50);
/** Export interval of the processes: short, so an arm's spans leave within about one window. */
const EXPORT_DELAY_MS = envNumber('BENCH_TRACE_EXPORT_DELAY_MS', 1_000);
const OUT = process.env.BENCH_TRACE_OUT ? resolve(process.env.BENCH_TRACE_OUT) : new URL('./results/tracing.json', import.meta.url).pathname;
/** Target: tracing on at 1% keeps at least this share of the throughput with it off. */
const TARGET_RATIO = 0.95;

const round = (n: number, digits = 0): number => Math.round(n * 10 ** digits) / 10 ** digits;
const progress = (line: string): void => say(line, 'tracing-bench');

type Arm = 'off' | 'on-0%' | 'on-1%' | 'on-100%';
/** Each arm and its gateway's sampling ratio (null: the deployment with tracing off). */
const ARMS: { arm: Arm; ratio: number | null }[] = [
  { arm: 'off', ratio: null },
  { arm: 'on-0%', ratio: 0 },
  { arm: 'on-1%', ratio: 0.01 },
  { arm: 'on-100%', ratio: 1 },
];

/** Every order of 0..n-1 (Heap's algorithm), so that the cycles of a round take each in turn. */
function permutations(n: number): number[][] {
  const out: number[][] = [];
  const a = Array.from({ length: n }, (_, i) => i);
  const c = new Array<number>(n).fill(0);
  out.push([...a]);
  let i = 0;
  while (i < n) {
    if (c[i]! < i) {
      const j = i % 2 === 0 ? 0 : c[i]!;
      [a[j], a[i]] = [a[i]!, a[j]!];
      out.push([...a]);
      c[i]!++;
      i = 0;
    } else {
      c[i] = 0;
      i++;
    }
  }
  return out;
}

interface Window {
  arm: Arm;
  cycle: number;
  reqPerSec: number;
  completed: number;
  durationSec: number;
  p99Ms: number;
  failed: number;
  gatewayCpuMs: number | null;
  brokersCpuMs: number | null;
}

interface ArmRound {
  reqPerSec: number;
  vsOff: number;
  gatewayCpuMsPerReq: number | null;
  brokersCpuMsPerReq: number | null;
  medianP99Ms: number;
}

interface Round {
  round: number;
  arms: Record<Arm, ArmRound>;
  spans: number;
  fromDist: boolean;
  loadAvg1m: { start: number; end: number };
  windows: Window[];
}

async function measure(d: TracingDeployment, arm: Arm, cycle: number, seconds: number): Promise<Window> {
  const before = [readCpu(d.gatewayPids), readCpu(d.brokerPids)];
  const run = await cannon({ url: d.gateway, requests: d.requests, connections: CONNECTIONS, pipelining: 1, durationSec: seconds });
  const after = [readCpu(d.gatewayPids), readCpu(d.brokerPids)];
  return {
    arm,
    cycle,
    reqPerSec: round(run.reqPerSecOverall),
    completed: run.completed,
    durationSec: run.durationSec,
    p99Ms: run.p99Ms,
    failed: run.non2xx + run.errors + run.timeouts,
    gatewayCpuMs: cpuDeltaMs(before[0]!, after[0]!),
    brokersCpuMs: cpuDeltaMs(before[1]!, after[1]!),
  };
}

async function runRound(roundNo: number, receiver: OtlpReceiver, notes: string[]): Promise<Round> {
  const keep = process.env.BENCH_TRACE_KEEP === '1';
  const fromDist = (buildIsCurrent as (root: URL) => boolean)(new URL('../', import.meta.url));
  const traced = (ratio: number) => ({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_TRACES_SAMPLER_ARG: String(ratio), OTEL_BSP_SCHEDULE_DELAY: String(EXPORT_DELAY_MS) });
  const deployments: TracingDeployment[] = [];
  try {
    const off = await startTracingDeployment({});
    deployments.push(off);
    const on = await startTracingDeployment(traced(0));
    deployments.push(on);
    // 100% on its own deployment: its span volume (a full queue, then an export of it) and the
    // garbage it leaves would otherwise weigh on the 0% and 1% windows that share its processes.
    const full = await startTracingDeployment(traced(1));
    deployments.push(full);
    const spansBefore = receiver.received;
    const deployment = (a: { ratio: number | null }) => (a.ratio === null ? off : a.ratio === 1 ? full : on);
    const select = async (a: { ratio: number | null }) => {
      if (a.ratio !== null && a.ratio !== 1) await setSampleRatio(on.gateway, a.ratio);
    };
    for (const a of ARMS) {
      await select(a);
      await measure(deployment(a), a.arm, -1, WARMUP_SECONDS);
    }
    const load0 = loadavg()[0]!;
    const orders = permutations(ARMS.length);
    const windows: Window[] = [];
    for (let c = 0; c < CYCLES; c++) {
      for (const i of orders[c % orders.length]!) {
        const a = ARMS[i]!;
        await select(a);
        windows.push(await measure(deployment(a), a.arm, c, WINDOW_SECONDS));
      }
    }
    const load1 = loadavg()[0]!;
    const rate = (arm: Arm) => {
      const mine = windows.filter((w) => w.arm === arm);
      const completed = mine.reduce((n, w) => n + w.completed, 0);
      const cpu = (f: (w: Window) => number | null) => {
        const v = mine.map(f);
        return v.some((x) => x === null) || completed === 0 ? null : round(v.reduce((n: number, x) => n + x!, 0) / completed, 4);
      };
      return { reqPerSec: completed / mine.reduce((n, w) => n + w.durationSec, 0), gatewayCpuMsPerReq: cpu((w) => w.gatewayCpuMs), brokersCpuMsPerReq: cpu((w) => w.brokersCpuMs), medianP99Ms: median(mine.map((w) => w.p99Ms)) };
    };
    const offRate = rate('off').reqPerSec;
    const arms = Object.fromEntries(ARMS.map(({ arm }) => {
      const r = rate(arm);
      return [arm, { ...r, reqPerSec: round(r.reqPerSec), vsOff: round(r.reqPerSec / offRate, 4) }];
    })) as Record<Arm, ArmRound>;
    const failed = windows.reduce((n, w) => n + w.failed, 0);
    if (failed > 0) notes.push(`round ${roundNo}: ${failed} requests failed (non-2xx, errors or timeouts)`);
    const r: Round = { round: roundNo, arms, spans: receiver.received - spansBefore, fromDist, loadAvg1m: { start: round(load0, 2), end: round(load1, 2) }, windows };
    progress(`round ${roundNo}: ${ARMS.map(({ arm }) => `${arm} ${arms[arm].reqPerSec.toLocaleString('en-US')} req/s (${arms[arm].vsOff})`).join(', ')}; ${r.spans} spans`);
    return r;
  } finally {
    for (const d of deployments) {
      const note = await d.stop(keep);
      if (note) notes.push(`round ${roundNo}: ${note}`);
      if (keep) progress(`kept ${d.dir}`);
    }
  }
}

async function main(): Promise<void> {
  const startedMs = Date.now();
  const notes: string[] = [];
  // Counting only: the receiver shares this process with the load generator.
  const receiver = await OtlpReceiver.start({ store: false });
  const rounds: Round[] = [];
  try {
    for (let r = 1; r <= ROUNDS; r++) rounds.push(await runRound(r, receiver, notes));
  } finally {
    await receiver.close();
  }
  const summary = Object.fromEntries(
    ARMS.map(({ arm }) => {
      const med = (f: (x: ArmRound) => number | null) => {
        const v = rounds.map((r) => f(r.arms[arm])).filter((x): x is number => x !== null);
        return v.length === 0 ? null : round(median(v), 4);
      };
      return [arm, { medianReqPerSec: med((x) => x.reqPerSec), medianVsOff: med((x) => x.vsOff), vsOffByRound: rounds.map((r) => r.arms[arm].vsOff), medianP99Ms: med((x) => x.medianP99Ms), medianGatewayCpuMsPerReq: med((x) => x.gatewayCpuMsPerReq), medianBrokersCpuMsPerReq: med((x) => x.brokersCpuMsPerReq) }];
    }),
  ) as Record<Arm, { medianReqPerSec: number; medianVsOff: number; vsOffByRound: number[]; medianP99Ms: number; medianGatewayCpuMsPerReq: number | null; medianBrokersCpuMsPerReq: number | null }>;
  if (rounds.some((x) => !x.fromDist) && rounds.some((x) => x.fromDist)) notes.push('some rounds ran the build in dist/, others the sources (a source changed during the benchmark): the rounds are not on equal code');
  const spans = rounds.reduce((n, r) => n + r.spans, 0);
  // Valid: every request answered 2xx and spans arrived (the exporter really ran).
  const valid = rounds.every((r) => r.windows.every((w) => w.failed === 0)) && spans > 0;
  if (spans === 0) notes.push('no span arrived: the sampled arms did not really trace');
  const onePercent = summary['on-1%'].medianVsOff;
  // 1% against 0% on the same deployment (the same processes, switched at run time): free of the
  // difference between two deployments, which 'vs off' carries (on this machine up to ±8% between
  // deployments that run the same code, seen as on-0% ≠ 1).
  const vsZeroByRound = rounds.map((r) => round(r.arms['on-1%'].reqPerSec / r.arms['on-0%'].reqPerSec, 4));
  const onePercentVsZero = round(median(vsZeroByRound), 4);
  const result = {
    bench: 'tracing',
    date: new Date().toISOString(),
    durationSec: Math.round((Date.now() - startedMs) / 1000),
    machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? 'unknown', node: process.version },
    setup: {
      deployment: `per round three edgeq dev deployments side by side (tracing off; on at 0% or 1%, switched; on at 100%), 1 region, ${BROKERS} brokers each, admission limiter off (EDGEQ_LIMITER=none)`,
      topic: `${PARTITIONS} partitions, replication factor ${REPLICATION_FACTOR}`,
      request: `POST /v1/topics/${BENCH_TOPIC}/records?acks=all, application/json, 1 record of ${VALUE_BYTES} B`,
      loadGenerator: `autocannon 9.0.0 in the bench process, ${CONNECTIONS} connections, one deployment loaded at a time`,
      schedule: `per round: ${WARMUP_SECONDS} s warm-up per arm, then ${CYCLES} cycles of one ${WINDOW_SECONDS} s window per arm, the arms' order taking each of their ${permutations(ARMS.length).length} orders in turn; the on arms switch the gateway's sampling with PUT /v1/tracing`,
      exporter: `OTLP/HTTP JSON to a receiver in the bench process, export every ${EXPORT_DELAY_MS} ms`,
      rounds: ROUNDS,
      figure: "an arm's req/s in a round = its completed requests / its windows' seconds; vs off = that ÷ off's in the same round; the summary is the median over rounds",
    },
    target: { onePercentVsOffMin: TARGET_RATIO, onePercentVsZeroSameDeploymentMin: TARGET_RATIO },
    summary,
    ratios: {
      onePercentVsOff: onePercent,
      onePercentVsZeroSameDeployment: onePercentVsZero,
      onePercentVsZeroByRound: vsZeroByRound,
      zeroVsOff: summary['on-0%'].medianVsOff,
      hundredPercentVsOff: summary['on-100%'].medianVsOff,
    },
    // Both ways of reading the target: against the deployment without tracing, and against the
    // same processes with nothing sampled.
    met: valid && onePercent >= TARGET_RATIO && onePercentVsZero >= TARGET_RATIO,
    valid,
    spans,
    notes,
    rounds,
  };
  await mkdir(dirname(OUT), { recursive: true });
  await writeFile(OUT, `${JSON.stringify(result, null, 2)}\n`);
  const line = (arm: Arm) => {
    const x = summary[arm];
    return `| ${arm} | ${x.medianReqPerSec.toLocaleString('en-US')} | ${x.medianVsOff} (${x.vsOffByRound.join(', ')}) | ${x.medianP99Ms} | ${x.medianGatewayCpuMsPerReq ?? '?'} | ${x.medianBrokersCpuMsPerReq ?? '?'} |`;
  };
  process.stdout.write(
    [
      `tracing cost, interleaved, median of ${ROUNDS} rounds (${OUT})`,
      '| tracing | req/s | vs off (rounds) | p99 ms | CPU ms/req gateway | CPU ms/req brokers |',
      '|---|---:|---:|---:|---:|---:|',
      ...ARMS.map((a) => line(a.arm)),
      `${spans} spans received`,
      `1% vs 0% on the same deployment: ${onePercentVsZero} (${vsZeroByRound.join(', ')})`,
      `1% vs off: ${onePercent}; target >= ${TARGET_RATIO} for both: ${result.met ? 'met' : 'not met'}${valid ? '' : ' (not a valid run: see notes)'}`,
      '',
    ].join('\n'),
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
