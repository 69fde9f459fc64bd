/**
 * edgeq against NATS JetStream on this machine, in one run (`npm run bench`).
 *
 * Both servers run as their own processes on loopback with file storage and one replica:
 * edgeq as `edgeq broker` (topic with one partition, `interval` flush), JetStream as
 * `nats-server -js` on its own port and store folder. For 100 B and 1 KiB messages it measures:
 *
 * - produce throughput with every acknowledgement awaited: each message is its own `send` /
 *   `js.publish` call, with the same bound on unanswered calls (WINDOW) for both;
 * - consume throughput: reading those messages back from the start;
 * - publish-to-ack latency at a fixed rate both hold (open loop: latency counts from the moment
 *   a message was due, so a stall is not hidden by coordinated omission), p50/p99/p999 from an
 *   HdrHistogram.
 *
 * JetStream 2.9 acknowledges before fsync, so it is compared with edgeq's `interval` mode; edgeq's
 * `sync` mode (acknowledged after fdatasync, group commit) is reported in its own rows.
 * Results go to bench/results/broker-vs-nats.json.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir, cpus } from 'node:os';
import { join } from 'node:path';
import { connect as natsConnect, type NatsConnection, type JetStreamClient } from 'nats';
import { spawnBroker } from '../test/helpers/broker-process.ts';
import { fixedRate as fixedRateRun, freePort, medianLatency, progress, table, windowed as windowedRun, type Row, interleavedRounds } from './lib/harness.ts';
import { consumeJetStream, edgeqTarget, type Target } from './lib/target.ts';

const SIZES = [100, 1024];
/** Unanswered produce calls allowed at once, for both systems. */
const WINDOW = Number(process.env.BENCH_WINDOW ?? 2048);
const PRODUCE_MSGS: Record<number, number> = { 100: Number(process.env.BENCH_MSGS_100 ?? 150_000), 1024: Number(process.env.BENCH_MSGS_1K ?? 100_000) };
/** Throughput phases stop at this many seconds even if not every message was sent. */
const PHASE_SECONDS_MAX = 60;
const LATENCY_RATE = Number(process.env.BENCH_RATE ?? 2000);
const LATENCY_SECONDS = Number(process.env.BENCH_LATENCY_SECONDS ?? 8);
const WARMUP_SECONDS = 2;
const LATENCY_ROUNDS = Number(process.env.BENCH_LATENCY_ROUNDS ?? 3);

/** Runs `send` for `count` messages with at most WINDOW unanswered; returns messages per second. */
const windowed = (count: number, send: (i: number) => Promise<unknown>) => windowedRun(count, send, { window: WINDOW, phaseSecondsMax: PHASE_SECONDS_MAX });

/** Open-loop fixed-rate run at LATENCY_RATE (see lib/harness.ts); WARMUP_SECONDS not recorded. */
const fixedRate = (send: () => Promise<unknown>) => fixedRateRun(send, { ratePerSec: LATENCY_RATE, seconds: LATENCY_SECONDS, warmupSeconds: WARMUP_SECONDS });

async function startNats(storeDir: string): Promise<{ port: number; child: ChildProcess }> {
  const port = await freePort();
  const child = spawn('nats-server', ['-js', '-a', '127.0.0.1', '-p', String(port), '-sd', storeDir], { stdio: ['ignore', 'ignore', 'pipe'] });
  // Ready when a client can connect: retry with a short backoff, bounded.
  for (let attempt = 0; attempt < 100; attempt++) {
    try {
      const nc = await natsConnect({ servers: `127.0.0.1:${port}`, timeout: 500 });
      await nc.close();
      return { port, child };
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  child.kill('SIGKILL');
  throw new Error('nats-server did not start');
}

/** edgeq on the lone broker at `port`, with the topic's flush policy set to `mode`. */
function loneTarget(port: number, mode: 'interval' | 'sync'): Target {
  return edgeqTarget({
    brokers: [`127.0.0.1:${port}`],
    clientId: `bench-${mode}`,
    mode,
    consumeSecondsMax: PHASE_SECONDS_MAX,
    async topicFor(size, _client, admin) {
      const topic = `bench-${mode}-${size}`;
      await admin.createTopics([{ name: topic, partitions: 1, config: { 'flush.policy': mode } }], { ifNotExists: true });
      return topic;
    },
  });
}

async function natsTarget(port: number): Promise<Target> {
  const nc: NatsConnection = await natsConnect({ servers: `127.0.0.1:${port}` });
  const jsm = await nc.jetstreamManager();
  const js: JetStreamClient = nc.jetstream();
  return {
    system: 'nats',
    mode: 'jetstream-file',
    async prepare(size) {
      const stream = `BENCH${size}`;
      const subject = `bench.${size}`;
      await jsm.streams.add({ name: stream, subjects: [subject], storage: 'file' as never, num_replicas: 1 });
      const payload = new Uint8Array(size).fill(0x61);
      return {
        send: () => js.publish(subject, payload),
        sendOne: () => js.publish(subject, payload),
        consume: (count) => consumeJetStream(js, jsm, stream, count, PHASE_SECONDS_MAX),
      };
    },
    close: () => nc.close(),
  };
}

async function main(): Promise<void> {
  const started = performance.now();
  const root = await mkdtemp(join(tmpdir(), 'edgeq-bench-'));
  const nats = await startNats(join(root, 'nats'));
  const broker = await spawnBroker({ dataDir: join(root, 'edgeq'), env: { EDGEQ_LOG_LEVEL: 'warn' } });
  const targets: Target[] = [await natsTarget(nats.port), loneTarget(broker.port, 'interval'), loneTarget(broker.port, 'sync')];
  try {
    type Prepared = Awaited<ReturnType<Target['prepare']>>;
    const prepared = new Map<string, Prepared>();
    const key = (t: Target, size: number) => `${t.system}/${t.mode}/${size}`;
    const throughput = new Map<string, { produce: number; consume: number }>();
    // Throughput, one system at a time (the others idle).
    for (const t of targets) {
      for (const size of SIZES) {
        const p = await t.prepare(size);
        prepared.set(key(t, size), p);
        const count = t.mode === 'sync' ? Math.round(PRODUCE_MSGS[size]! / 2) : PRODUCE_MSGS[size]!;
        const produced = await windowed(count, p.send);
        const consume = await p.consume(produced.done);
        throughput.set(key(t, size), { produce: produced.rate, consume });
        progress(`${t.system} ${t.mode} ${size} B: produce ${Math.round(produced.rate)}/s, consume ${Math.round(consume)}/s`);
      }
    }
    // Latency in interleaved rounds (the order rotates), so drift on the machine hits every
    // system alike; each figure reported is the median over the rounds.
    const rounds = await interleavedRounds(targets, SIZES, LATENCY_ROUNDS, (t, size) => fixedRate(prepared.get(key(t, size))!.sendOne), key);
    const rows: Row[] = [];
    for (const t of targets) {
      for (const size of SIZES) {
        const tp = throughput.get(key(t, size))!;
        const lats = rounds.get(key(t, size))!;
        rows.push({
          system: t.system,
          mode: t.mode,
          messageBytes: size,
          produceMsgsPerSec: Math.round(tp.produce),
          consumeMsgsPerSec: Math.round(tp.consume),
          latency: medianLatency(lats, LATENCY_RATE),
          latencyRounds: lats,
        });
      }
    }
    const find = (system: string, mode: string, size: number) => rows.find((r) => r.system === system && r.mode === mode && r.messageBytes === size)!;
    const checks = {
      produce100BRatio: find('edgeq', 'interval', 100).produceMsgsPerSec / find('nats', 'jetstream-file', 100).produceMsgsPerSec,
      produce100BTarget: 5,
      p99NoWorse: SIZES.map((s) => ({
        messageBytes: s,
        edgeqP99Ms: find('edgeq', 'interval', s).latency.p99Ms,
        natsP99Ms: find('nats', 'jetstream-file', s).latency.p99Ms,
        met: find('edgeq', 'interval', s).latency.p99Ms <= find('nats', 'jetstream-file', s).latency.p99Ms,
      })),
    };
    const result = {
      date: new Date().toISOString(),
      machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? 'unknown', node: process.version },
      settings: {
        window: WINDOW,
        produceMessages: PRODUCE_MSGS,
        latencyRatePerSec: LATENCY_RATE,
        latencySeconds: LATENCY_SECONDS,
        warmupSeconds: WARMUP_SECONDS,
        latencyRounds: LATENCY_ROUNDS,
        edgeqLingerMsThroughput: 5,
        edgeqLingerMsLatency: 0,
      },
      rows,
      targets: checks,
      durationSec: Math.round((performance.now() - started) / 1000),
    };
    await mkdir(new URL('./results/', import.meta.url), { recursive: true });
    await writeFile(new URL('./results/broker-vs-nats.json', import.meta.url), `${JSON.stringify(result, null, 2)}\n`);
    console.log(table(rows));
    console.log(`\nedgeq/JetStream produce, 100 B: ${checks.produce100BRatio.toFixed(1)}x (target ${checks.produce100BTarget}x)`);
    for (const p of checks.p99NoWorse) console.log(`p99 at ${LATENCY_RATE}/s, ${p.messageBytes} B: edgeq ${p.edgeqP99Ms} ms vs JetStream ${p.natsP99Ms} ms -> ${p.met ? 'met' : 'NOT met'}`);
    console.log(`took ${result.durationSec} s; wrote bench/results/broker-vs-nats.json`);
  } finally {
    for (const t of targets) await t.close().catch(() => undefined);
    await broker.kill('SIGTERM');
    nats.child.kill('SIGTERM');
    await rm(root, { recursive: true, force: true });
  }
}

await main();
process.exit(0);
