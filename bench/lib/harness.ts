/**
 * The measuring pieces the benches share: windowed produce with every acknowledgement awaited,
 * open-loop fixed-rate latency into an HdrHistogram (warm-up not recorded), medians over rounds,
 * progress lines on stderr and the markdown table of results.
 */
import type { EdgeqClient } from '../../src/client/index.ts';
import * as hdr from 'hdr-histogram-js';
export { freePort } from '../../test/helpers/ports.ts';

/** Publish-to-ack latency at a fixed rate. */
export interface Latency {
  ratePerSec: number;
  p50Ms: number;
  p99Ms: number;
  p999Ms: number;
  maxMs: number;
}

/** One line of results: a system, a mode and a message size. */
export interface Row {
  system: 'edgeq' | 'nats';
  mode: string;
  messageBytes: number;
  /** Copies of each message (the cell bench); absent for single-server runs. */
  replicas?: number;
  produceMsgsPerSec: number;
  consumeMsgsPerSec: number | null;
  latency: Latency;
  latencyRounds?: Latency[];
}

/** Writes a progress line on stderr (stdout carries the results). */
export function progress(line: string, tag = 'bench'): void {
  process.stderr.write(`[${tag}] ${line}\n`);
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export type Histogram = ReturnType<typeof hdr.build>;

/** Microsecond histogram up to 120 s, 3 significant digits. */
export function newHistogram(): Histogram {
  return hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 120_000_000, numberOfSignificantValueDigits: 3 });
}

/** Bounds of a windowed produce phase. */
export interface WindowOptions {
  /** Unanswered `send` calls allowed at once. */
  window: number;
  /** The phase stops starting sends after this many seconds even if not every message was sent. */
  phaseSecondsMax: number;
}

/** Runs `send` for `count` messages with at most `window` unanswered; returns messages per second. */
export async function windowed(count: number, send: (i: number) => Promise<unknown>, options: WindowOptions): Promise<{ rate: number; done: number }> {
  const t0 = performance.now();
  const deadline = t0 + options.phaseSecondsMax * 1000;
  let inflight = 0;
  let done = 0;
  let failed: unknown = null;
  let wake: (() => void) | null = null;
  for (let i = 0; i < count && performance.now() < deadline; i++) {
    while (inflight >= options.window) await new Promise<void>((r) => (wake = r));
    if (failed) throw failed;
    inflight++;
    send(i).then(
      () => {
        inflight--;
        done++;
        wake?.();
      },
      (err: unknown) => {
        failed = err;
        inflight--;
        wake?.();
      },
    );
  }
  while (inflight > 0) await new Promise<void>((r) => (wake = r));
  if (failed) throw failed;
  return { rate: done / ((performance.now() - t0) / 1000), done };
}

/** Rate and length of a fixed-rate latency run. */
export interface FixedRateOptions {
  ratePerSec: number;
  seconds: number;
  /** Seconds sent at the same rate first and not recorded. */
  warmupSeconds: number;
}

/**
 * Open-loop fixed-rate run: message i is due at t0 + i/rate; latency = ack time − due time. The
 * first `warmupSeconds` at the same rate are not recorded (JIT, connection set-up, the previous
 * phase's garbage), for every system alike.
 */
export async function fixedRate(send: () => Promise<unknown>, options: FixedRateOptions): Promise<Latency> {
  await openLoop(send, options.ratePerSec, options.ratePerSec * options.warmupSeconds, null);
  const h = newHistogram();
  await openLoop(send, options.ratePerSec, options.ratePerSec * options.seconds, h);
  const ms = (us: number) => Math.round(us) / 1000;
  const out = {
    ratePerSec: options.ratePerSec,
    p50Ms: ms(h.getValueAtPercentile(50)),
    p99Ms: ms(h.getValueAtPercentile(99)),
    p999Ms: ms(h.getValueAtPercentile(99.9)),
    maxMs: ms(h.maxValue),
  };
  h.destroy();
  return out;
}

/** Sends `total` messages, message i due at t0 + i/rate, recording ack time − due time into `h`. */
export async function openLoop(send: () => Promise<unknown>, ratePerSec: number, total: number, h: Histogram | null): Promise<void> {
  const t0 = performance.now() + 50;
  const pending: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const due = t0 + (i * 1000) / ratePerSec;
    // Never early, and no busy wait (a spinning load generator would steal a core from the
    // server under test on this 2-core machine): a timer fires at or after the due time.
    while (performance.now() < due) await new Promise((r) => setTimeout(r, Math.max(1, due - performance.now())));
    pending.push(send().then(() => h?.recordValue(Math.max(1, Math.round((performance.now() - due) * 1000)))));
    if (pending.length > 10_000) await Promise.all(pending.splice(0, 5_000));
  }
  await Promise.all(pending);
}

/** The middle value (the upper one of an even count). */
export function median(values: readonly number[]): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** Each percentile's median over latency rounds. */
export function medianLatency(rounds: readonly Latency[], ratePerSec: number): Latency {
  return {
    ratePerSec,
    p50Ms: median(rounds.map((l) => l.p50Ms)),
    p99Ms: median(rounds.map((l) => l.p99Ms)),
    p999Ms: median(rounds.map((l) => l.p999Ms)),
    maxMs: median(rounds.map((l) => l.maxMs)),
  };
}

/** The rows as a markdown table (a replicas column when the rows have one). */
export function table(rows: readonly Row[]): string {
  const withReplicas = rows.some((r) => r.replicas !== undefined);
  const head = `| system | mode | msg bytes |${withReplicas ? ' replicas |' : ''} produce msg/s | consume msg/s | rate/s | p50 ms | p99 ms | p99.9 ms |`;
  const sep = `|---|---|---:|${withReplicas ? '---:|' : ''}---:|---:|---:|---:|---:|---:|`;
  const lines = rows.map(
    (r) =>
      `| ${r.system} | ${r.mode} | ${r.messageBytes} |${withReplicas ? ` ${r.replicas ?? '-'} |` : ''} ${r.produceMsgsPerSec.toLocaleString('en-US')} | ${r.consumeMsgsPerSec?.toLocaleString('en-US') ?? '-'} | ${r.latency.ratePerSec} | ${r.latency.p50Ms} | ${r.latency.p99Ms} | ${r.latency.p999Ms} |`,
  );
  return [head, sep, ...lines].join('\n');
}

/**
 * Reads `count` records of partition 0 of `topic` from the start with an edgeq consumer (large
 * fetches), bounded by `phaseSecondsMax`; returns records per second.
 */
export async function consumeEdgeq(client: EdgeqClient, topic: string, count: number, phaseSecondsMax: number): Promise<number> {
  const consumer = client.consumer({ fromBeginning: true, maxWaitMs: 100, partitionFetchBytesMax: 4 * 1024 * 1024, fetchMaxBytes: 16 * 1024 * 1024, pollRecordsMax: 50_000 });
  consumer.assign([{ topic, partition: 0 }]);
  const c0 = performance.now();
  let got = 0;
  while (got < count && performance.now() - c0 < phaseSecondsMax * 1000) got += (await consumer.poll({ maxRecords: 50_000, timeoutMs: 1000 })).length;
  const rate = got / ((performance.now() - c0) / 1000);
  await consumer.close();
  return rate;
}

/** Polls `pred` every `stepMs` until it holds or `timeoutMs` passed; true if it held. Errors count as "not yet". */
export async function waitUntil(pred: () => boolean | Promise<boolean>, timeoutMs: number, stepMs = 10): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    try {
      if (await pred()) return true;
    } catch {
      // not yet (a broker may be away): ask again
    }
    if (performance.now() >= deadline) return false;
    await sleep(stepMs);
  }
}

/**
 * Latency in interleaved rounds: each round measures every target for every size, the order
 * rotating from round to round, so drift on the machine hits every system alike. Returns the
 * rounds' figures by `key(target, size)`.
 */
export async function interleavedRounds<T extends { system: string; mode: string }>(
  targets: readonly T[],
  sizes: readonly number[],
  rounds: number,
  measure: (t: T, size: number) => Promise<Latency>,
  key: (t: T, size: number) => string,
  tag = 'bench',
): Promise<Map<string, Latency[]>> {
  const out = new Map<string, Latency[]>();
  for (let round = 0; round < rounds; round++) {
    for (const size of sizes) {
      for (let i = 0; i < targets.length; i++) {
        const t = targets[(i + round) % targets.length]!;
        const lat = await measure(t, size);
        const list = out.get(key(t, size)) ?? [];
        list.push(lat);
        out.set(key(t, size), list);
        progress(`round ${round + 1}/${rounds} ${t.system} ${t.mode} ${size} B: p50 ${lat.p50Ms} p99 ${lat.p99Ms} p99.9 ${lat.p999Ms} ms`, tag);
      }
    }
  }
  return out;
}
