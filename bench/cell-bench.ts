/**
 * A replicated edgeq cell against a replicated NATS JetStream cluster on this machine, in one run,
 * and the cell's failover time (`npm run bench:cell`).
 *
 * edgeq: an embedded arbiter process and three `edgeq broker` processes joined into a cell
 * (ProcessCell, the broker defaults for the lease TTL and the replica lag bound); one topic per
 * message size with one partition, replication factor 3, `min.insync.replicas` 2, `interval`
 * flush, produced with acks=all. JetStream: three `nats-server -js` processes routed into one
 * cluster, a file-storage stream of 3 replicas per message size; its publishes go to a connection
 * on the stream leader's server (its best case: no extra route hop).
 *
 * For 100 B and 1 KiB messages, as in broker-vs-nats.ts: produce throughput with every
 * acknowledgement awaited (each message its own `send` / `js.publish`, the same bound WINDOW on
 * unanswered calls for both), consume throughput reading them back, and open-loop fixed-rate
 * publish-to-ack latency p50/p99/p999 (warm-up not recorded; interleaved rounds, medians).
 *
 * Failover: FAILOVER_RUNS times, with a producer sending one acks=all record every few ms, SIGKILL
 * the partition leader's process and time from the kill to the first acknowledgement of a record
 * sent after the process was gone (so written by the new leader); then restart the killed broker
 * and wait until it is back in the ISR. A SIGKILLed broker does not revoke its lease, so the
 * failover time is about the lease TTL plus the election and the client's metadata refresh.
 *
 * Results go to bench/results/cell.json (the defaults take about 4-5 minutes on 2 cores). Smaller
 * runs for development: BENCH_CELL_MSGS (or BENCH_CELL_MSGS_100 / BENCH_CELL_MSGS_1K),
 * BENCH_CELL_LATENCY_SECONDS, BENCH_CELL_WARMUP_SECONDS, BENCH_CELL_LATENCY_ROUNDS, BENCH_CELL_RATE,
 * BENCH_CELL_WINDOW, BENCH_FAILOVER_RUNS. BENCH_CELL_LOG_DIR=<dir> with EDGEQ_LOG_LEVEL=info keeps
 * the brokers' logs.
 */
import { execFileSync } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir, cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { connect as natsConnect, StorageType, type NatsConnection } from 'nats';
import { createClient, type Admin, type Producer } from '../src/client/index.ts';
import { DEFAULT_CONFIG } from '../src/config/index.ts';
import { ProcessCell } from '../test/helpers/cell-process.ts';
import { cleanupTempDirs } from '../test/helpers/tmp.ts';
import { fixedRate, interleavedRounds, median, medianLatency, progress as say, sleep, table, type Row, waitUntil, windowed } from './lib/harness.ts';
import { consumeJetStream, edgeqTarget, type Target } from './lib/target.ts';
import { addStreamWhenReady, startNatsCluster, tail, type NatsCluster } from './lib/nats-cluster.ts';
import { envNumber } from './lib/env.ts';

const SIZES = [100, 1024];
const REPLICAS = 3;
const MIN_INSYNC = 2;
/** Unanswered produce calls allowed at once, for both systems. */
const WINDOW = envNumber('BENCH_CELL_WINDOW', 2048);
const PRODUCE_MSGS: Record<number, number> = {
  100: envNumber('BENCH_CELL_MSGS_100', envNumber('BENCH_CELL_MSGS', 150_000)),
  1024: envNumber('BENCH_CELL_MSGS_1K', envNumber('BENCH_CELL_MSGS', 100_000)),
};
/** Throughput phases stop at this many seconds even if not every message was sent. */
const PHASE_SECONDS_MAX = 60;
const LATENCY = {
  ratePerSec: envNumber('BENCH_CELL_RATE', 2000),
  seconds: envNumber('BENCH_CELL_LATENCY_SECONDS', 8),
  warmupSeconds: envNumber('BENCH_CELL_WARMUP_SECONDS', 2),
};
const LATENCY_ROUNDS = envNumber('BENCH_CELL_LATENCY_ROUNDS', 3);

/** The broker defaults: the failover target is for these. */
const LEASE_TTL_MS = DEFAULT_CONFIG.cell.leaseTtlMs;
const REPLICA_LAG_TIME_MAX_MS = DEFAULT_CONFIG.cell.replicaLagTimeMaxMs;
const FAILOVER_RUNS = envNumber('BENCH_FAILOVER_RUNS', 20);
/** The failover producer starts one send this often... */
const FAILOVER_SEND_INTERVAL_MS = 2;
/** ...with at most this many unanswered (during the failover they pile up). */
const FAILOVER_OUTSTANDING_MAX = 5_000;
const FAILOVER_MESSAGE_BYTES = 100;
/** Bounds of one run: the first post-kill ack, the answers still out after it, the ISR rejoin. */
const FAILOVER_ACK_WAIT_MS = 30_000;
const FAILOVER_DRAIN_WAIT_MS = 30_000;
const FAILOVER_ISR_WAIT_MS = 60_000;
/** Without an acknowledgement this long after the kill, the killed broker is restarted anyway. */
const FAILOVER_RESTART_AFTER_MS = 12_000;
/** No failover run starts after this many seconds of the failover phase. */
const FAILOVER_PHASE_SECONDS_MAX = 300;
/** The failover client: how fast it notices the new leader and how long its sends keep retrying. */
const FAILOVER_CLIENT = {
  metadataMaxAgeMs: 500,
  reconnectBackoffMsMax: 500,
  retry: { retriesMax: 50, retryBackoffMs: 50, retryBackoffMsMax: 250, retryTimeMsMax: 30_000 },
};
const FAILOVER_PRODUCER = { acks: 'all' as const, lingerMs: 0, retriesMax: 1_000, retryBackoffMs: 50, retryBackoffMsMax: 250, deliveryTimeoutMs: 60_000 };

const TARGETS = { produce100BRatio: 3, failoverMs: 3_000 };

const progress = (line: string): void => say(line, 'cell-bench');

/**
 * With BENCH_CELL_LOG_DIR set, each broker's log lines (pino JSON on its stdout, which the process
 * helper reads only for the "listening" line) are appended to <dir>/broker-<id>.log; combine with
 * EDGEQ_LOG_LEVEL=info or debug.
 */
const LOG_DIR = process.env.BENCH_CELL_LOG_DIR;

function captureLogs(cell: ProcessCell, id: number): void {
  const b = cell.brokers.get(id);
  if (!LOG_DIR || !b?.child.stdout) return;
  const out = createWriteStream(join(LOG_DIR, `broker-${id}.log`), { flags: 'a' });
  b.child.stdout.on('data', (d: Buffer) => out.write(d));
  b.child.once('exit', () => out.end());
}

/** The commit measured, and source files changed in the working tree then (others edit it meanwhile). */
function sourceState(): { commit: string; uncommittedSourceFiles: string[] } {
  const git = (...args: string[]) => execFileSync('git', args, { cwd: new URL('..', import.meta.url), encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  try {
    const changed = git('status', '--porcelain', '--', 'src', 'region', 'bin', 'test/helpers');
    return { commit: git('rev-parse', '--short', 'HEAD'), uncommittedSourceFiles: changed ? changed.split('\n').map((l) => l.trim()) : [] };
  } catch {
    return { commit: 'unknown', uncommittedSourceFiles: [] };
  }
}

interface PartitionView {
  leaderId: number;
  leaderEpoch: number;
  isr: number[];
}

async function partitionOf(admin: Admin, topic: string): Promise<PartitionView> {
  const [d] = await admin.describeTopics([topic]);
  const p = d!.partitions[0]!;
  return { leaderId: p.leaderId, leaderEpoch: p.leaderEpoch, isr: p.isr };
}

/** Waits until partition 0 of `topic` has a leader and `isrSize` in-sync replicas. */
async function waitHealthy(admin: Admin, topic: string, isrSize: number, timeoutMs: number): Promise<PartitionView> {
  let last: PartitionView | null = null;
  const ok = await waitUntil(
    async () => {
      last = await partitionOf(admin, topic);
      return last.leaderId >= 0 && last.isr.length >= isrSize;
    },
    timeoutMs,
    50,
  );
  if (!ok) throw new Error(`${topic}-0 not healthy within ${timeoutMs} ms (want a leader and ${isrSize} in sync; last seen ${JSON.stringify(last)})`);
  return last!;
}

/** Things that went differently from the plan (worked around, not hidden): printed and in the JSON. */
const notes: string[] = [];

function note(line: string): void {
  notes.push(line);
  progress(`note: ${line}`);
}

type Client = ReturnType<typeof createClient>;

const PROBE_WAIT_MS = 3_000;
const TOPIC_ATTEMPTS_MAX = 5;

/**
 * Creates a topic of one partition, replication factor 3, `min.insync.replicas` 2, and proves both
 * followers replicate: a record sent with acks=all must be acknowledged within PROBE_WAIT_MS (the
 * ISR listing alone does not show it). A follower that is not fetching — its first
 * OffsetForLeaderEpoch reached the leader before the leader had applied the topic, and the
 * replica fetcher then waits for a state change that never comes — makes the topic useless for
 * acks=all; then another topic is created (noted), at most TOPIC_ATTEMPTS_MAX times.
 */
async function createReplicatedTopic(client: Client, admin: Admin, base: string): Promise<string> {
  for (let attempt = 0; attempt < TOPIC_ATTEMPTS_MAX; attempt++) {
    const name = attempt === 0 ? base : `${base}-r${attempt}`;
    await admin.createTopics(
      [{ name, partitions: 1, replicationFactor: REPLICAS, config: { 'flush.policy': 'interval', 'min.insync.replicas': String(MIN_INSYNC) } }],
      { ifNotExists: true },
    );
    const state = await waitHealthy(admin, name, REPLICAS, 30_000);
    const probe = client.producer({ acks: 'all', lingerMs: 0, requestTimeoutMs: PROBE_WAIT_MS, deliveryTimeoutMs: PROBE_WAIT_MS, retriesMax: 3 });
    const t0 = performance.now();
    const acked = await Promise.race([probe.send(name, { value: 'probe' }).then(() => true, () => false), sleep(PROBE_WAIT_MS).then(() => false)]);
    void probe.close().catch(() => undefined);
    if (acked) {
      progress(`edgeq topic ${name}: leader ${state.leaderId}, isr [${state.isr.join(',')}], acks=all probe answered in ${Math.round(performance.now() - t0)} ms`);
      return name;
    }
    note(`topic ${name} (leader ${state.leaderId}, isr [${state.isr.join(',')}]): an acks=all record was not acknowledged within ${PROBE_WAIT_MS} ms (a follower not fetching); using a new topic`);
  }
  throw new Error(`no replicated topic ${base} took acks=all writes in ${TOPIC_ATTEMPTS_MAX} attempts`);
}

/** edgeq on the cell, on a replicated topic that takes acks=all writes. */
function cellTarget(cell: ProcessCell): Target {
  return edgeqTarget({
    brokers: cell.addresses(),
    clientId: 'bench-cell',
    mode: 'interval',
    consumeSecondsMax: PHASE_SECONDS_MAX,
    topicFor: (size, client, admin) => createReplicatedTopic(client, admin, `bench-cell-${size}`),
  });
}

async function natsTarget(cluster: NatsCluster): Promise<Target> {
  // Stream management through any server; publishing and reading through the stream leader's.
  const control: NatsConnection = await natsConnect({ servers: cluster.servers });
  const byNode = new Map<string, NatsConnection>();
  const connectionTo = async (node: string) => {
    let nc = byNode.get(node);
    if (!nc) {
      nc = await natsConnect({ servers: `127.0.0.1:${cluster.portOf(node)}`, noRandomize: true });
      byNode.set(node, nc);
    }
    return nc;
  };
  return {
    system: 'nats',
    mode: 'jetstream-file',
    async prepare(size) {
      const stream = `CELL${size}`;
      const subject = `cell.${size}`;
      await addStreamWhenReady(control, { name: stream, subjects: [subject], storage: StorageType.File, num_replicas: REPLICAS });
      const jsm = await control.jetstreamManager();
      let leader: string | undefined;
      let replicasCurrent = 0;
      await waitUntil(
        async () => {
          const info = await jsm.streams.info(stream);
          leader = info.cluster?.leader;
          replicasCurrent = (info.cluster?.replicas ?? []).filter((r) => r.current).length;
          return leader !== undefined && replicasCurrent === REPLICAS - 1;
        },
        30_000,
        100,
      );
      if (!leader) throw new Error(`stream ${stream} has no leader`);
      progress(`nats stream ${stream}: leader ${leader}, ${replicasCurrent} current followers`);
      const nc = await connectionTo(leader);
      const js = nc.jetstream();
      const payload = new Uint8Array(size).fill(0x61);
      return {
        send: () => js.publish(subject, payload),
        sendOne: () => js.publish(subject, payload),
        consume: (count) => consumeJetStream(js, jsm, stream, count, PHASE_SECONDS_MAX),
      };
    },
    async close() {
      for (const nc of [...byNode.values(), control]) await nc.close().catch(() => undefined);
    },
  };
}

/** Throughput, then interleaved latency rounds, for every target; returns the rows. */
async function measure(targets: Target[]): Promise<Row[]> {
  type Prepared = Awaited<ReturnType<Target['prepare']>>;
  const prepared = new Map<string, Prepared>();
  const key = (t: Target, size: number) => `${t.system}/${t.mode}/${size}`;
  const throughput = new Map<string, { produce: number; consume: number }>();
  // Throughput, one system at a time (the other idles).
  for (const t of targets) {
    for (const size of SIZES) {
      const p = await t.prepare(size);
      prepared.set(key(t, size), p);
      const produced = await windowed(PRODUCE_MSGS[size]!, p.send, { window: WINDOW, phaseSecondsMax: PHASE_SECONDS_MAX });
      const consume = await p.consume(produced.done);
      throughput.set(key(t, size), { produce: produced.rate, consume });
      progress(`${t.system} ${t.mode} ${size} B: produce ${Math.round(produced.rate)}/s (${produced.done} msgs), consume ${Math.round(consume)}/s`);
    }
  }
  // Latency in interleaved rounds (the order rotates), so drift on the machine hits every system
  // alike; each figure reported is the median over the rounds.
  const rounds = await interleavedRounds(targets, SIZES, LATENCY_ROUNDS, (t, size) => fixedRate(prepared.get(key(t, size))!.sendOne, LATENCY), key, 'cell-bench');
  const rows: Row[] = [];
  for (const t of targets) {
    for (const size of SIZES) {
      const tp = throughput.get(key(t, size))!;
      const lats = rounds.get(key(t, size))!;
      rows.push({
        system: t.system,
        mode: t.mode,
        messageBytes: size,
        replicas: REPLICAS,
        produceMsgsPerSec: Math.round(tp.produce),
        consumeMsgsPerSec: Math.round(tp.consume),
        latency: medianLatency(lats, LATENCY.ratePerSec),
        latencyRounds: lats,
      });
    }
  }
  return rows;
}

/** One failover run, as the JSON reports it. */
interface FailoverRun {
  run: number;
  /** The broker SIGKILLed (the leader before) and the leader after, with its epoch. */
  killed: number;
  newLeader: number;
  newLeaderEpoch: number;
  /** SIGKILL to the first acknowledgement of a record sent after the process was gone; null if none came in time. */
  ms: number | null;
  /** SIGKILL to the first metadata answer naming another leader (polled every 50 ms). */
  leaderSeenMs: number | null;
  /**
   * True when no post-kill record was acknowledged within FAILOVER_RESTART_AFTER_MS, so the killed
   * broker was restarted before the acknowledgement (`ms` then includes its restart).
   */
  restartedBeforeAck: boolean;
  /** Records acknowledged / failed during the run (failures should be 0: sends are retried). */
  acked: number;
  sendErrors: number;
  /** Restarting the killed broker, and from then until it was back in the ISR. */
  restartMs: number;
  isrBackMs: number | null;
  /** Brokers restarted because they did not rejoin the ISR in time (see the notes). */
  recoveryRestarts: number[];
}

/** Restarts (SIGKILL, start) the brokers missing from the ISR; true once the ISR is full again. */
async function recoverIsr(cell: ProcessCell, admin: Admin, topic: string, run: number, restarted: number[]): Promise<boolean> {
  const p = await partitionOf(admin, topic).catch(() => null);
  const missing = [1, 2, 3].filter((id) => !p?.isr.includes(id));
  note(`failover run ${run}: ISR still [${p?.isr.join(',') ?? '?'}] after ${FAILOVER_ISR_WAIT_MS} ms; restarting broker(s) ${missing.join(',')} to get it back`);
  for (const id of missing) {
    await cell.kill(id);
    await cell.startBroker(id);
    captureLogs(cell, id);
    restarted.push(id);
  }
  return waitUntil(async () => (await partitionOf(admin, topic)).isr.length === REPLICAS, FAILOVER_ISR_WAIT_MS, 50);
}

async function failoverRun(run: number, cell: ProcessCell, admin: Admin, producer: Producer, topic: string): Promise<FailoverRun> {
  const before = await waitHealthy(admin, topic, REPLICAS, FAILOVER_ISR_WAIT_MS);
  const leader = before.leaderId;
  const value = Buffer.alloc(FAILOVER_MESSAGE_BYTES, 0x62);
  /** Sends started at or after this moment count: the old leader's process was gone by then. */
  let goneAt = Infinity;
  let firstAckAt: number | null = null;
  let acked = 0;
  let sendErrors = 0;
  let lastError: unknown = null;
  let outstanding = 0;
  let stop = false;
  const senderDeadline = performance.now() + 10_000 + FAILOVER_ACK_WAIT_MS;
  const sender = (async () => {
    while (!stop && performance.now() < senderDeadline) {
      if (outstanding < FAILOVER_OUTSTANDING_MAX) {
        const sentAt = performance.now();
        outstanding++;
        producer.send(topic, { value }).then(
          () => {
            outstanding--;
            acked++;
            if (firstAckAt === null && sentAt >= goneAt) firstAckAt = performance.now();
          },
          (err: unknown) => {
            outstanding--;
            sendErrors++;
            lastError = err;
          },
        );
      }
      await sleep(FAILOVER_SEND_INTERVAL_MS);
    }
  })();
  let killAt = 0;
  let leaderSeenAt: number | null = null;
  let restartMs = -1;
  let restartedBeforeAck = false;
  const restart = async () => {
    const r0 = performance.now();
    await cell.startBroker(leader);
    captureLogs(cell, leader);
    restartMs = Math.round(performance.now() - r0);
  };
  try {
    // Steady state first: acknowledgements flowing.
    if (!(await waitUntil(() => acked >= 50, 10_000))) throw new Error(`failover run ${run}: no steady acks before the kill (${acked} acked, ${sendErrors} failed: ${String(lastError)})`);
    killAt = performance.now();
    await cell.kill(leader);
    goneAt = performance.now();
    const watcher = (async () => {
      while (leaderSeenAt === null && performance.now() - killAt < FAILOVER_ACK_WAIT_MS) {
        try {
          const p = await partitionOf(admin, topic);
          if (p.leaderId >= 0 && p.leaderId !== leader) leaderSeenAt = performance.now();
        } catch {
          // asked the dead broker, or no leader yet
        }
        if (leaderSeenAt === null) await sleep(50);
      }
    })();
    if (!(await waitUntil(() => firstAckAt !== null, FAILOVER_RESTART_AFTER_MS, 2))) {
      // Two brokers left and still no acknowledgement: the survivors are stuck (e.g. a follower
      // not fetching from the new leader, so the ISR shrinks below min.insync.replicas). The
      // killed broker coming back may unstick them; do not wait for what may never come.
      restartedBeforeAck = true;
      note(`failover run ${run}: no acknowledgement ${FAILOVER_RESTART_AFTER_MS} ms after killing broker ${leader} (leader in metadata ${leaderSeenAt === null ? 'not yet seen' : `after ${Math.round(leaderSeenAt - killAt)} ms`}); restarting it before the first ack`);
      await restart();
      await waitUntil(() => firstAckAt !== null, Math.max(0, FAILOVER_ACK_WAIT_MS - (performance.now() - killAt)), 2);
    }
    await watcher;
  } finally {
    stop = true;
    await sender;
  }
  await waitUntil(() => outstanding === 0, FAILOVER_DRAIN_WAIT_MS);
  const after = await partitionOf(admin, topic).catch(() => ({ leaderId: -1, leaderEpoch: -1, isr: [] }) as PartitionView);
  if (!restartedBeforeAck) await restart();
  const i0 = performance.now();
  let back = await waitUntil(async () => (await partitionOf(admin, topic)).isr.length === REPLICAS, FAILOVER_ISR_WAIT_MS, 50);
  const isrBackMs = back ? Math.round(performance.now() - i0) : null;
  const recoveryRestarts: number[] = [];
  if (!back) back = await recoverIsr(cell, admin, topic, run, recoveryRestarts);
  if (!back) throw new Error(`failover run ${run}: the ISR of ${topic}-0 did not get back to ${REPLICAS} brokers, even after restarting the missing ones`);
  if (sendErrors > 0) note(`failover run ${run}: ${sendErrors} sends failed, last: ${String(lastError)}`);
  return {
    run,
    killed: leader,
    newLeader: after.leaderId,
    newLeaderEpoch: after.leaderEpoch,
    ms: firstAckAt === null ? null : Math.round(firstAckAt - killAt),
    leaderSeenMs: leaderSeenAt === null ? null : Math.round(leaderSeenAt - killAt),
    restartedBeforeAck,
    acked,
    sendErrors,
    restartMs,
    isrBackMs,
    recoveryRestarts,
  };
}

async function failover(cell: ProcessCell): Promise<FailoverRun[]> {
  const client = createClient({ brokers: cell.addresses(), clientId: 'bench-cell-failover', ...FAILOVER_CLIENT });
  try {
    const admin = client.admin();
    const topic = await createReplicatedTopic(client, admin, 'bench-cell-failover');
    const producer = client.producer(FAILOVER_PRODUCER);
    const runs: FailoverRun[] = [];
    const phaseEnd = performance.now() + FAILOVER_PHASE_SECONDS_MAX * 1000;
    for (let run = 1; run <= FAILOVER_RUNS; run++) {
      if (performance.now() > phaseEnd) {
        note(`failover: stopped after ${run - 1} runs, the phase's ${FAILOVER_PHASE_SECONDS_MAX} s were used up`);
        break;
      }
      const r = await failoverRun(run, cell, admin, producer, topic);
      runs.push(r);
      progress(
        `failover ${run}/${FAILOVER_RUNS}: killed ${r.killed}, new leader ${r.newLeader} (epoch ${r.newLeaderEpoch}), first ack after ${r.ms ?? 'none'} ms (leader in metadata after ${r.leaderSeenMs ?? '-'} ms)${r.restartedBeforeAck ? ' [restarted before the ack]' : ''}; restart ${r.restartMs} ms, back in ISR after ${r.isrBackMs ?? 'timeout'} ms`,
      );
    }
    await producer.close();
    return runs;
  } finally {
    await client.close();
  }
}

async function main(): Promise<void> {
  const started = performance.now();
  // The machine may be shared (other test runs): the load at the start and end goes in the JSON.
  const loadAtStart = loadavg()[0]!;
  const source = sourceState();
  if (source.uncommittedSourceFiles.length > 0) progress(`measuring ${source.commit} with uncommitted changes: ${source.uncommittedSourceFiles.join(', ')}`);
  const root = await mkdtemp(join(tmpdir(), 'edgeq-cell-bench-'));
  // What is running, for the finally and the signal handler (set from callbacks, so not narrowed).
  const up: { nats: NatsCluster | null; cell: ProcessCell | null } = { nats: null, cell: null };
  const targets: Target[] = [];
  // Interrupted (Ctrl-C): leave no server processes behind.
  const onSignal = (signal: NodeJS.Signals) => {
    for (const n of up.nats?.nodes ?? []) n.child.kill('SIGKILL');
    for (const b of up.cell?.brokers.values() ?? []) b.child.kill('SIGKILL');
    up.cell?.arbiter?.child.kill('SIGKILL');
    process.exit(signal === 'SIGINT' ? 130 : 143);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    progress(`starting a 3-node JetStream cluster and a 3-broker edgeq cell (lease TTL ${LEASE_TTL_MS} ms)`);
    const cell = new ProcessCell({ size: REPLICAS, leaseTtlMs: LEASE_TTL_MS, replicaLagTimeMaxMs: REPLICA_LAG_TIME_MAX_MS, env: { EDGEQ_LOG_LEVEL: process.env.EDGEQ_LOG_LEVEL ?? 'warn' } });
    // Both start at once; wait for both even when one fails, so the finally stops whatever started.
    up.cell = cell;
    const [natsStart, cellStart] = await Promise.allSettled([startNatsCluster(join(root, 'nats'), { size: REPLICAS }).then((n) => (up.nats = n)), cell.start()]);
    if (natsStart.status === 'rejected') throw natsStart.reason;
    if (cellStart.status === 'rejected') throw cellStart.reason;
    const nats = natsStart.value;
    if (LOG_DIR) await mkdir(LOG_DIR, { recursive: true });
    for (const id of cell.brokers.keys()) captureLogs(cell, id);
    targets.push(await natsTarget(nats), cellTarget(cell));
    const rows = await measure(targets);
    for (const t of targets.splice(0)) await t.close().catch(() => undefined);
    // JetStream is done: stop it so it takes no CPU from the failover runs.
    await nats.stop();
    const runs = await failover(cell);
    // A run without an acknowledgement within FAILOVER_ACK_WAIT_MS counts as that long (a lower bound).
    const times = runs.map((r) => r.ms ?? FAILOVER_ACK_WAIT_MS);
    const failoverResult = {
      runs: runs.length,
      leaseTtlMs: LEASE_TTL_MS,
      medianMs: times.length > 0 ? median(times) : null,
      maxMs: times.length > 0 ? Math.max(...times) : null,
      runsMs: runs.map((r) => r.ms),
      /** Runs without an acknowledgement within FAILOVER_ACK_WAIT_MS (counted as that long). */
      timedOut: runs.filter((r) => r.ms === null).length,
      /** Runs where the killed broker had to be restarted before the first acknowledgement. */
      restartedBeforeAck: runs.filter((r) => r.restartedBeforeAck).length,
      /** Median time from the kill until the metadata named the new leader. */
      leaderSeenMedianMs: (() => {
        const seen = runs.map((r) => r.leaderSeenMs).filter((ms): ms is number => ms !== null);
        return seen.length > 0 ? median(seen) : null;
      })(),
      details: runs,
    };

    const find = (system: string, size: number) => rows.find((r) => r.system === system && r.messageBytes === size)!;
    const ratio = find('edgeq', 100).produceMsgsPerSec / find('nats', 100).produceMsgsPerSec;
    const targetsResult = {
      produce100BRatio: Math.round(ratio * 100) / 100,
      produce100BTarget: TARGETS.produce100BRatio,
      produce100BMet: ratio >= TARGETS.produce100BRatio,
      failoverTargetMs: TARGETS.failoverMs,
      failoverMedianMet: failoverResult.medianMs !== null && failoverResult.medianMs < TARGETS.failoverMs,
      failoverMaxMet: failoverResult.maxMs !== null && failoverResult.maxMs < TARGETS.failoverMs,
      p99: SIZES.map((s) => ({ messageBytes: s, edgeqP99Ms: find('edgeq', s).latency.p99Ms, natsP99Ms: find('nats', s).latency.p99Ms })),
    };
    const result = {
      date: new Date().toISOString(),
      machine: {
        cpus: cpus().length,
        cpuModel: cpus()[0]?.model ?? 'unknown',
        node: process.version,
        loadAvg1mAtStart: Math.round(loadAtStart * 100) / 100,
        loadAvg1mAtEnd: Math.round(loadavg()[0]! * 100) / 100,
      },
      settings: {
        source,
        replicas: REPLICAS,
        minInsyncReplicas: MIN_INSYNC,
        edgeqFlushPolicy: 'interval',
        leaseTtlMs: LEASE_TTL_MS,
        replicaLagTimeMaxMs: REPLICA_LAG_TIME_MAX_MS,
        natsStorage: 'file',
        natsPublishTo: 'stream leader',
        window: WINDOW,
        produceMessages: PRODUCE_MSGS,
        latencyRatePerSec: LATENCY.ratePerSec,
        latencySeconds: LATENCY.seconds,
        warmupSeconds: LATENCY.warmupSeconds,
        latencyRounds: LATENCY_ROUNDS,
        edgeqLingerMsThroughput: 5,
        edgeqLingerMsLatency: 0,
        /** What went differently from the plan (worked around, not hidden). */
        notes,
        failover: {
          runsPlanned: FAILOVER_RUNS,
          ackWaitMs: FAILOVER_ACK_WAIT_MS,
          restartAfterMs: FAILOVER_RESTART_AFTER_MS,
          messageBytes: FAILOVER_MESSAGE_BYTES,
          sendIntervalMs: FAILOVER_SEND_INTERVAL_MS,
          client: FAILOVER_CLIENT,
          producer: FAILOVER_PRODUCER,
        },
      },
      failover: failoverResult,
      rows,
      targets: targetsResult,
      durationSec: Math.round((performance.now() - started) / 1000),
    };
    await mkdir(new URL('./results/', import.meta.url), { recursive: true });
    await writeFile(new URL('./results/cell.json', import.meta.url), `${JSON.stringify(result, null, 2)}\n`);
    console.log(table(rows));
    console.log(`\nedgeq/JetStream produce, 100 B, 3 replicas: ${ratio.toFixed(2)}x (target ${TARGETS.produce100BRatio}x) -> ${targetsResult.produce100BMet ? 'met' : 'NOT met'}`);
    console.log(
      `failover (lease TTL ${LEASE_TTL_MS} ms, ${failoverResult.runs} runs${failoverResult.timedOut ? `, ${failoverResult.timedOut} timed out` : ''}): median ${failoverResult.medianMs} ms, max ${failoverResult.maxMs} ms (target < ${TARGETS.failoverMs} ms) -> median ${targetsResult.failoverMedianMet ? 'met' : 'NOT met'}, max ${targetsResult.failoverMaxMet ? 'met' : 'NOT met'}`,
    );
    console.log(`failover runs (ms): ${failoverResult.runsMs.map((ms) => ms ?? 'timeout').join(', ')}`);
    console.log(`  the new leader showed in metadata after ${failoverResult.leaderSeenMedianMs} ms (median); the rest is the client finding it and the ISR catching up`);
    if (notes.length > 0) console.log(`\nnotes:\n${notes.map((n) => `- ${n}`).join('\n')}`);
    console.log(`took ${result.durationSec} s; wrote bench/results/cell.json`);
  } catch (err) {
    for (const n of up.nats?.nodes ?? []) if (n.child.exitCode !== null) progress(`nats ${n.name} exited; log tail:\n${await tail(n.logFile)}`);
    throw err;
  } finally {
    for (const t of targets) await t.close().catch(() => undefined);
    await up.nats?.stop().catch(() => undefined);
    await up.cell?.close().catch(() => undefined);
    await cleanupTempDirs().catch(() => undefined);
    await rm(root, { recursive: true, force: true }).catch(() => undefined);
  }
}

await main();
process.exit(0);
