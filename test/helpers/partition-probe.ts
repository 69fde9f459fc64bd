/**
 * Probes for the real-process cell tests: raw requests to one specific broker with a bound on
 * every answer (a frozen or cut-off broker must not hang the test), a continuous acks=all
 * producer that records what was acknowledged and when, and the read-back checks (every
 * acknowledged record present, at its offset, exactly once; replicas agree batch by batch).
 */
import { appendFileSync } from 'node:fs';
import { expect } from 'vitest';
import type { Producer } from '../../src/client/index.ts';
import { toEdgeqError } from '../../src/core/index.ts';
import { buildBatch, decodeBatches } from '../../src/log/index.ts';
import { Acks, errorOf } from '../../src/protocol/index.ts';
import type { ProcessCell } from './cell-process.ts';
import { RawClient } from './raw-client.ts';
import { replicaBatches, type ReplicaCopy } from './replica-check.ts';

export { sleep, waitFor } from '../../src/testing/index.ts';
import { sleep, waitFor } from '../../src/testing/index.ts';

/** A tracer: progress lines when EDGEQ_TEST_TRACE is set (to a file path: also the brokers' logs). */
export function tracer(label: string): { trace: (msg: string) => void; brokers: (cell: ProcessCell) => void } {
  const t0 = Date.now();
  const target = process.env.EDGEQ_TEST_TRACE;
  return {
    trace: (msg) => {
      // eslint-disable-next-line no-console
      if (target) console.log(`[${label} +${Date.now() - t0} ms] ${msg}`);
    },
    brokers: (cell) => {
      if (!target || target === '1') return;
      for (const [id, b] of cell.brokers) b.child.stdout?.on('data', (chunk: Buffer) => appendFileSync(target, chunk.toString('utf8').replace(/^(?=.)/gm, `b${id} `)));
    },
  };
}

/** What one raw produce got: an offset, or a typed error (`code`; NO_ANSWER when none came in time). */
export type Outcome = { ok: true; offset: number; sentAt: number; at: number } | { ok: false; code: string; retriable: boolean; sentAt: number; at: number };

/** A partition as one broker sees it. */
export interface PartitionView {
  leaderId: number;
  leaderEpoch: number;
  isr: number[];
}

/** Raw requests to one broker about partition 0 of `topic`, every answer bounded in time. */
export class Probe {
  private client: RawClient | null = null;

  constructor(
    readonly port: number,
    readonly topic: string,
  ) {}

  private async conn(): Promise<RawClient> {
    if (this.client && !this.client.closed) return this.client;
    this.client = await RawClient.connect(this.port);
    return this.client;
  }

  /** Sends a request; 'timeout' when no answer comes within `ms` (the connection is dropped then). */
  private async call<T>(fn: (c: RawClient) => Promise<T>, ms: number): Promise<T | 'timeout'> {
    const c = await this.conn();
    let timer: NodeJS.Timeout | undefined;
    try {
      const r = await Promise.race([fn(c), new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), ms)))]);
      // An unanswered request leaves the connection out of step: start a new one next time.
      if (r === 'timeout') this.drop();
      return r;
    } catch (err) {
      this.drop();
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Produces one non-idempotent record. */
  async produce(value: string, acks: 'all' | 'leader', waitMs = 3000): Promise<Outcome> {
    const batch = await buildBatch([{ value }]);
    const sentAt = Date.now();
    let res;
    try {
      res = await this.call(
        (c) => c.call('Produce', { acks: acks === 'all' ? Acks.ALL : Acks.LEADER, timeoutMs: 1000, topics: [{ name: this.topic, partitions: [{ partition: 0, records: batch }] }] }),
        waitMs,
      );
    } catch (err) {
      return { ok: false, code: `CONNECTION: ${(err as Error).message}`, retriable: true, sentAt, at: Date.now() };
    }
    if (res === 'timeout') return { ok: false, code: 'NO_ANSWER', retriable: true, sentAt, at: Date.now() };
    const r = res.topics[0]!.partitions[0]!;
    const err = errorOf(r.error);
    return err ? { ok: false, code: err.code, retriable: r.error?.retriable === true, sentAt, at: Date.now() } : { ok: true, offset: Number(r.baseOffset), sentAt, at: Date.now() };
  }

  /** The broker's view of the partition, or undefined without an answer. */
  async partition(waitMs = 2000): Promise<PartitionView | undefined> {
    const res = await this.call((c) => c.call('Metadata', { topics: [this.topic] }), waitMs).catch(() => 'timeout' as const);
    if (res === 'timeout') return undefined;
    const p = res.topics.find((t) => t.name === this.topic)?.partitions[0];
    return p ? { leaderId: p.leaderId, leaderEpoch: p.leaderEpoch, isr: [...p.isr].sort((a, b) => a - b) } : undefined;
  }

  drop(): void {
    this.client?.close();
    this.client = null;
  }
}

/** Waits until every probed broker reports the same leader, epoch and a full ISR of `size`. */
export function stableLeader(probes: Iterable<Probe>, size: number, timeoutMs = 30_000): Promise<PartitionView> {
  const all = [...probes];
  return waitFor('a leader with the full ISR, agreed by every broker', timeoutMs, async () => {
    const views = await Promise.all(all.map((p) => p.partition()));
    const first = views[0];
    if (!first || first.leaderId < 0 || first.isr.length !== size) return undefined;
    return views.every((v) => v && v.leaderId === first.leaderId && v.leaderEpoch === first.leaderEpoch && v.isr.length === size) ? first : undefined;
  }, 100);
}

/** A send that failed for good. */
export interface SendFailure {
  value: string;
  code: string;
  retriable: boolean;
  at: number;
}

/** Continuous acks=all produce through the client library, recording what was acknowledged and when. */
export class ContinuousProducer {
  /** value → offset (-1 when the answer carried none). */
  readonly acked = new Map<string, number>();
  /** Acknowledgement times, in arrival order. */
  readonly ackTimes: number[] = [];
  readonly failures: SendFailure[] = [];
  private seq = 0;
  private stopped = false;
  private readonly loop: Promise<void>;

  constructor(
    private readonly producer: Producer,
    private readonly topic: string,
    options: { inflightMax?: number; pauseMs?: number; prefix?: string; onFailure?: (f: SendFailure) => void } = {},
  ) {
    const inflightMax = options.inflightMax ?? 20;
    const pauseMs = options.pauseMs ?? 3;
    const prefix = options.prefix ?? 'p';
    this.loop = (async () => {
      const inflight = new Set<Promise<void>>();
      while (!this.stopped) {
        const value = `${prefix}${this.seq++}`;
        const p = this.producer.send(this.topic, { value }).then(
          ([m]) => {
            this.acked.set(value, m!.offset);
            this.ackTimes.push(Date.now());
          },
          (err: unknown) => {
            const e = toEdgeqError(err);
            const f = { value, code: e.code, retriable: e.retriable, at: Date.now() };
            this.failures.push(f);
            options.onFailure?.(f);
          },
        );
        inflight.add(p);
        void p.finally(() => inflight.delete(p));
        if (inflight.size >= inflightMax) await Promise.race(inflight);
        await sleep(pauseMs);
      }
      await Promise.all(inflight);
    })();
  }

  get count(): number {
    return this.acked.size;
  }

  /** Acknowledgements that arrived in [from, to). */
  acksBetween(from: number, to: number): number {
    return this.ackTimes.filter((t) => t >= from && t < to).length;
  }

  /** Stops sending and waits (at most `waitMs`) for the sends in flight. */
  async stop(waitMs = 70_000): Promise<void> {
    this.stopped = true;
    await Promise.race([this.loop, sleep(waitMs)]);
  }
}

/** Every record of partition 0 below the leader's HW, in offset order. */
export async function readAll(leaderPort: number, topic: string): Promise<{ offset: number; value: string }[]> {
  const c = await RawClient.connect(leaderPort);
  try {
    const out: { offset: number; value: string }[] = [];
    let offset = 0;
    for (let i = 0; i < 100_000; i++) {
      const f = await c.call('Fetch', { replicaId: -1, maxWaitMs: 0, minBytes: 0, maxBytes: 4 << 20, topics: [{ name: topic, partitions: [{ partition: 0, fetchOffset: offset, maxBytes: 4 << 20 }] }] });
      const p = f.topics[0]!.partitions[0]!;
      const err = errorOf(p.error);
      if (err) throw err;
      const recs = (await decodeBatches(Buffer.from(p.records), offset)).filter((r) => r.offset >= offset);
      if (recs.length === 0) break;
      for (const r of recs) out.push({ offset: r.offset, value: r.value!.toString() });
      offset = recs[recs.length - 1]!.offset + 1;
    }
    return out;
  } finally {
    c.close();
  }
}

/**
 * Checks the read-back log: every acknowledged record is there (at its offset when known), the
 * records `onceOnly` picks (by default the idempotent producer's, values `p…`) at most once,
 * offsets strictly increasing.
 */
export function checkAcknowledged(
  seen: { offset: number; value: string }[],
  ackedMaps: Map<string, number>[],
  onceOnly: (value: string) => boolean = (v) => v.startsWith('p'),
): void {
  const offsetsOf = new Map<string, number[]>();
  for (const s of seen) offsetsOf.set(s.value, [...(offsetsOf.get(s.value) ?? []), s.offset]);
  const missing: string[] = [];
  const misplaced: string[] = [];
  for (const acked of ackedMaps) {
    for (const [value, offset] of acked) {
      const at = offsetsOf.get(value);
      if (!at) missing.push(value);
      else if (offset >= 0 && !at.includes(offset)) misplaced.push(`${value}@${offset} found at ${at.join(',')}`);
    }
  }
  expect(missing, 'acknowledged records missing').toEqual([]);
  expect(misplaced, 'acknowledged records at another offset').toEqual([]);
  const dup = [...offsetsOf].filter(([v, offs]) => onceOnly(v) && offs.length > 1).map(([v, offs]) => `${v}@${offs.join(',')}`);
  expect(dup, 'records written twice').toEqual([]);
  const disorder = seen.findIndex((s, i) => i > 0 && s.offset <= seen[i - 1]!.offset);
  expect(disorder, 'offsets not strictly increasing').toBe(-1);
}

/** One broker's replica of a partition as its cell status reports it. */
export interface ReplicaStatus {
  role: string;
  leaderId: number;
  leaderEpoch: number;
  isr: number[];
  highWatermark: number;
  logEndOffset: number;
}

/** The replica of `topic`-`partition` on the broker at `port`, or undefined without an answer within 2 s. */
export async function replicaStatus(topic: string, port: number, partition = 0): Promise<ReplicaStatus | undefined> {
  const c = await RawClient.connect(port).catch(() => null);
  if (!c) return undefined;
  try {
    const res = await Promise.race([c.call('CellStatus', {}), sleep(2000).then(() => null)]);
    const r = res?.replicas.find((x) => x.topic === topic && x.partition === partition);
    return r
      ? { role: r.role, leaderId: r.leaderId, leaderEpoch: r.leaderEpoch, isr: [...r.isr], highWatermark: Number(r.highWatermark), logEndOffset: Number(r.logEndOffset) }
      : undefined;
  } finally {
    c.close();
  }
}

/** A partition's marks as its leader reported them while the cell ran. */
export interface PartitionMarks {
  leader: number;
  highWatermark: number;
  isr: number[];
}

/**
 * Asks every live broker for its cell status and returns the marks of `topic`-0 as its leader
 * reports them (the leader's HW and ISR); retries until a leader answers.
 */
export function partitionMarks(cell: ProcessCell, topic: string, timeoutMs = 20_000): Promise<PartitionMarks> {
  return waitFor(`the marks of ${topic}-0 from its leader`, timeoutMs, async () => {
    for (const id of cell.brokers.keys()) {
      const c = await RawClient.connect(cell.portOf(id)).catch(() => null);
      if (!c) continue;
      try {
        const res = await Promise.race([c.call('CellStatus', {}), sleep(2000).then(() => null)]);
        const r = res?.replicas.find((x) => x.topic === topic && x.partition === 0 && x.role === 'leader');
        if (r) return { leader: id, highWatermark: Number(r.highWatermark), isr: [...r.isr].sort((a, b) => a - b) };
      } finally {
        c.close();
      }
    }
    return undefined;
  }, 200);
}

/**
 * After the cell stopped, checks partition 0's replicas against the marks its leader reported
 * before: every ISR member holds every batch below the high watermark, byte for byte the
 * leader's (offset, CRC, epoch); a replica outside the ISR holds a prefix of them; beyond the high
 * watermark no two replicas hold different batches at the same position; and none holds a
 * `forbidden` value (a divergent tail that had to go). Returns the batches below the HW.
 */
export async function checkReplicasAgree(cell: ProcessCell, topic: string, ids: number[], marks: PartitionMarks, forbidden: readonly string[] = []): Promise<number> {
  const copies = new Map(await Promise.all(ids.map(async (id) => [id, await replicaBatches(cell.dirOf(id), topic, 0)] as const)));
  const below = (c: ReplicaCopy) => c.batches.filter((_, i) => c.ranges[i]![0] < marks.highWatermark);
  const leader = copies.get(marks.leader);
  expect(leader, `the leader ${marks.leader} is among the replicas checked`).toBeDefined();
  const reference = below(leader!);
  const covered = (c: ReplicaCopy) => c.ranges.some(([, last]) => last >= marks.highWatermark - 1);
  expect(marks.highWatermark === 0 || covered(leader!), `the leader holds its HW ${marks.highWatermark}`).toBe(true);
  for (const [id, c] of copies) {
    const mine = below(c);
    if (marks.isr.includes(id)) {
      expect(mine, `ISR member ${id} holds every batch below the HW ${marks.highWatermark}, as the leader ${marks.leader}`).toEqual(reference);
      expect(marks.highWatermark === 0 || covered(c), `ISR member ${id} holds the HW ${marks.highWatermark}`).toBe(true);
    } else {
      expect(mine, `replica ${id} (outside the ISR) holds a prefix of the leader's batches`).toEqual(reference.slice(0, mine.length));
    }
    const values = new Set(c.records.map((r) => r.value?.toString()));
    for (const v of forbidden) expect(values.has(v), `divergent ${v} still on broker ${id}`).toBe(false);
  }
  // Past the HW, positions two replicas both hold carry the same batch.
  const all = [...copies.values()];
  const shortest = Math.min(...all.map((c) => c.batches.length));
  for (const c of all) expect(c.batches.slice(0, shortest)).toEqual(all[0]!.batches.slice(0, shortest));
  expect(reference.length).toBeGreaterThan(0);
  return reference.length;
}
