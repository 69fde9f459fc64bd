/**
 * What 1% sampling costs in CPU (`npm run bench:tracing-cpu` → bench/results/tracing-cpu.json):
 * one `edgeq dev` region as bench:tracing builds it (3 brokers, 3 partitions, replication factor
 * 3, acks=all, one 100-byte JSON record per request), tracing on, exporting every second to a
 * receiver in this process, loaded at a FIXED rate (open loop, BENCH_TRACE_CPU_RATE requests/s,
 * below what the machine serves) while the gateway's sampling is switched between 0% and 1%
 * (PUT /v1/tracing) window by window, in alternating order. At a fixed rate every window does the
 * same work apart from tracing, so the CPU each process used per request (utime + stime from
 * /proc) compares the two directly, where a closed loop's throughput also moves with batching and
 * with this machine's swings. The figure: µs of CPU per request added by 1% over the gateway and
 * the brokers, and per sampled request (that ÷ 1%).
 *
 * Defaults take about 2.5 minutes: BENCH_TRACE_CPU_RATE (2,500), BENCH_TRACE_CPU_CYCLES (10),
 * BENCH_TRACE_CPU_WINDOW_SECONDS (3), BENCH_TRACE_CPU_OUT.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { dirname, resolve } from 'node:path';
import { OtlpReceiver } from '../test/tracing/otlp-receiver.ts';
import { cannon } from './lib/autocannon.ts';
import { envNumber } from './lib/env.ts';
import { progress as say } from './lib/harness.ts';
import { cpuMs } from './lib/proc-cpu.ts';
import { setSampleRatio, startTracingDeployment } from './lib/tracing-deployment.ts';

const RATE = envNumber('BENCH_TRACE_CPU_RATE', 2_500);
const CYCLES = envNumber('BENCH_TRACE_CPU_CYCLES', 10);
const WINDOW_SECONDS = envNumber('BENCH_TRACE_CPU_WINDOW_SECONDS', 3);
/** Warm-up per ratio before the measured cycles (the JIT, the first exports). */
const WARMUP_SECONDS = 8;
const CONNECTIONS = 50;
const EXPORT_DELAY_MS = 1_000;
const RATIOS = [0, 0.01] as const;
const OUT = process.env.BENCH_TRACE_CPU_OUT ? resolve(process.env.BENCH_TRACE_CPU_OUT) : new URL('./results/tracing-cpu.json', import.meta.url).pathname;

const round = (n: number, digits = 1): number => Math.round(n * 10 ** digits) / 10 ** digits;
const progress = (line: string): void => say(line, 'tracing-cpu');

interface Arm {
  completed: number;
  seconds: number;
  failed: number;
  /** CPU ms per process over the arm's windows: the gateway, then each broker. */
  cpuMs: number[];
}

async function main(): Promise<void> {
  const startedMs = Date.now();
  const receiver = await OtlpReceiver.start({ store: false });
  const d = await startTracingDeployment({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_TRACES_SAMPLER_ARG: '0', OTEL_BSP_SCHEDULE_DELAY: String(EXPORT_DELAY_MS) });
  const pids = [...d.gatewayPids, ...d.brokerPids];
  const arms = new Map<number, Arm>(RATIOS.map((r) => [r, { completed: 0, seconds: 0, failed: 0, cpuMs: pids.map(() => 0) }]));
  const load = (seconds: number) => cannon({ url: d.gateway, requests: d.requests, connections: CONNECTIONS, pipelining: 1, durationSec: seconds, overallRate: RATE });
  try {
    for (const r of RATIOS) {
      await setSampleRatio(d.gateway, r);
      await load(WARMUP_SECONDS);
    }
    for (let c = 0; c < CYCLES; c++) {
      for (const r of c % 2 === 0 ? RATIOS : [...RATIOS].reverse()) {
        await setSampleRatio(d.gateway, r);
        const before = pids.map(cpuMs);
        const run = await load(WINDOW_SECONDS);
        const after = pids.map(cpuMs);
        const arm = arms.get(r)!;
        arm.completed += run.completed;
        arm.seconds += run.durationSec;
        arm.failed += run.non2xx + run.errors + run.timeouts;
        pids.forEach((_, i) => (arm.cpuMs[i]! += (after[i] ?? NaN) - (before[i] ?? NaN)));
      }
      progress(`cycle ${c + 1}/${CYCLES}`);
    }
  } finally {
    await d.stop(false);
    await receiver.close();
  }
  const perRequest = (a: Arm) => a.cpuMs.map((ms) => (ms * 1000) / a.completed);
  const zero = arms.get(0)!;
  const one = arms.get(0.01)!;
  const us0 = perRequest(zero);
  const us1 = perRequest(one);
  const total = (v: number[]) => v.reduce((a, b) => a + b, 0);
  const addedPerRequest = total(us1) - total(us0);
  const valid = zero.failed + one.failed === 0 && receiver.received > 0 && us0.every(Number.isFinite) && us1.every(Number.isFinite);
  const result = {
    bench: 'tracing-cpu',
    date: new Date().toISOString(),
    durationSec: Math.round((Date.now() - startedMs) / 1000),
    machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? 'unknown', node: process.version },
    setup: {
      deployment: '1 edgeq dev region, 3 brokers, topic of 3 partitions with replication factor 3, admission limiter off, tracing on exporting every 1 s over OTLP/HTTP to a receiver in the bench process',
      load: `autocannon, ${CONNECTIONS} connections, open loop at ${RATE} requests/s, POST acks=all, 1 JSON record of 100 B`,
      schedule: `${WARMUP_SECONDS} s warm-up per ratio, then ${CYCLES} cycles of one ${WINDOW_SECONDS} s window at 0% and one at 1%, in alternating order`,
      figure: 'CPU (utime + stime) per completed request per process; added = 1% minus 0%, summed over the gateway and the brokers',
    },
    reqPerSec: { zero: round(zero.completed / zero.seconds, 0), onePercent: round(one.completed / one.seconds, 0) },
    cpuUsPerRequest: {
      zero: { gateway: round(us0[0]!), brokers: us0.slice(1).map((x) => round(x)), total: round(total(us0)) },
      onePercent: { gateway: round(us1[0]!), brokers: us1.slice(1).map((x) => round(x)), total: round(total(us1)) },
    },
    addedUsPerRequest: round(addedPerRequest),
    addedShare: round(addedPerRequest / total(us0), 4),
    addedUsPerSampledRequest: round(addedPerRequest / 0.01, 0),
    spans: receiver.received,
    valid,
  };
  await mkdir(dirname(OUT), { recursive: true });
  await writeFile(OUT, `${JSON.stringify(result, null, 2)}\n`);
  process.stdout.write(
    [
      `tracing CPU at ${RATE} requests/s (${OUT})`,
      `0%: ${result.cpuUsPerRequest.zero.total} µs/request (gateway ${result.cpuUsPerRequest.zero.gateway}, brokers ${result.cpuUsPerRequest.zero.brokers.join(', ')})`,
      `1%: ${result.cpuUsPerRequest.onePercent.total} µs/request (gateway ${result.cpuUsPerRequest.onePercent.gateway}, brokers ${result.cpuUsPerRequest.onePercent.brokers.join(', ')})`,
      `added by 1%: ${result.addedUsPerRequest} µs/request (${round(result.addedShare * 100, 1)}%), ~${result.addedUsPerSampledRequest} µs per sampled request; ${result.spans} spans${valid ? '' : ' (not a valid run: failed requests or no spans)'}`,
      '',
    ].join('\n'),
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
