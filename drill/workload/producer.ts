/**
 * One producer of the checked workload: one record per request, `acks=all`, on an open-loop
 * schedule (record k is due at start + k / rate, whatever the answers do), each outcome recorded.
 *
 * Partitions: the producer walks the topic's partitions round-robin from a seeded start and sends
 * each record to the next partition that has none of its requests in flight (the record's
 * `partition` is in the body and in its ProducedRecord). One request per partition at a time is
 * what makes the per-origin order checkable: a record is sent only after the one before it on
 * that partition was answered, so an acked record's offset is above every earlier acked one of
 * the same producer and partition. (An indeterminate request may still land later: the checker
 * must allow indeterminate records out of order.)
 *
 * A record due while no partition is free (or PRODUCER_INFLIGHT_MAX requests are out) is not sent
 * and is counted as skipped: the schedule does not queue, so a slow cell shows as fewer records
 * sent, not as a growing backlog.
 */
import type { Clock, TimerHandle } from '../../src/core/index.ts';
import type { CheckedTopic, ProducedRecord, ProduceOutcome } from '../types.ts';

/** A ProducedRecord plus how often it was refused by the quota or limiter and sent again with the same id. */
export interface WorkloadRecord extends ProducedRecord {
  readonly retries: number;
}
import { classifyProduce } from './classify.ts';
import { requestJson, sleepOn, type GatewayHttpOptions } from './http.ts';

/** Requests one producer keeps in flight at most (also at most one per partition). */
export const PRODUCER_INFLIGHT_MAX = 16;
/** Retries of one record refused by the quota or the limiter before it counts as failed. */
export const PRODUCE_RETRIES_MAX = 20;
/** Due records sent in one tick at most; a tick later than this many periods skips the rest. */
export const SCHEDULE_CATCHUP_MAX = 64;
/** Digits of the sequence in a record id (more when a run goes past them). */
const SEQ_DIGITS = 6;

/** What a producer is built from. */
export interface ProducerOptions {
  readonly region: string;
  readonly gateway: string;
  readonly topic: CheckedTopic;
  /** `g` or `l`: the topic kind in the record id. */
  readonly kind: string;
  /** The producer's name in the id, e.g. `p0`. */
  readonly name: string;
  /** Records per second. */
  readonly rate: number;
  /** No record is scheduled after this long from start (the run's bound on records). */
  readonly durationMs: number;
  /** First partition of the round-robin and the schedule's phase in [0, 1) of a period. */
  readonly firstPartition: number;
  readonly phase: number;
  readonly requestTimeoutMs: number;
  readonly http: GatewayHttpOptions;
  readonly onRecord: (r: WorkloadRecord) => void;
}

/** A producer's counters. */
export interface ProducerCounters {
  sent: number;
  skipped: number;
  retries: number;
  inflight: number;
}

export class Producer {
  readonly counters: ProducerCounters = { sent: 0, skipped: 0, retries: 0, inflight: 0 };
  private readonly busy: boolean[];
  private cursor: number;
  private seq = 0;
  private startMs = 0;
  private nextDue = 0;
  private readonly dueMax: number;
  private timer: TimerHandle | null = null;
  private stopping = false;
  private readonly stop$ = new AbortController();
  private readonly pending = new Set<Promise<void>>();

  constructor(private readonly o: ProducerOptions) {
    this.busy = Array.from({ length: o.topic.partitions }, () => false);
    this.cursor = o.firstPartition % o.topic.partitions;
    this.dueMax = Math.floor((o.durationMs / 1000) * o.rate);
  }

  get region(): string {
    return this.o.region;
  }

  start(): void {
    this.startMs = this.o.http.clock.monotonicMs();
    this.arm();
  }

  /** Stops scheduling, ends retry waits (those records failed: nothing was written), waits for answers. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.timer?.cancel();
    this.timer = null;
    this.stop$.abort();
    await Promise.all([...this.pending]);
  }

  private dueAt(k: number): number {
    return this.startMs + ((k + this.o.phase) * 1000) / this.o.rate;
  }

  private arm(): void {
    if (this.stopping || this.nextDue >= this.dueMax) return;
    const delay = Math.max(0, this.dueAt(this.nextDue) - this.o.http.clock.monotonicMs());
    this.timer = this.o.http.clock.setTimeout(() => this.tick(), delay);
  }

  private tick(): void {
    this.timer = null;
    const now = this.o.http.clock.monotonicMs();
    let sentNow = 0;
    while (!this.stopping && this.nextDue < this.dueMax && this.dueAt(this.nextDue) <= now) {
      this.nextDue++;
      if (sentNow >= SCHEDULE_CATCHUP_MAX) {
        this.counters.skipped++;
        continue;
      }
      sentNow++;
      const p = this.freePartition();
      if (p < 0) this.counters.skipped++;
      else this.launch(p);
    }
    this.arm();
  }

  private freePartition(): number {
    if (this.counters.inflight >= PRODUCER_INFLIGHT_MAX) return -1;
    const n = this.busy.length;
    for (let i = 0; i < n; i++) {
      const p = (this.cursor + i) % n;
      if (!this.busy[p]) {
        this.cursor = (p + 1) % n;
        return p;
      }
    }
    return -1;
  }

  private launch(partition: number): void {
    const seq = this.seq++;
    this.busy[partition] = true;
    this.counters.inflight++;
    this.counters.sent++;
    const done = this.send(partition, seq).finally(() => {
      this.busy[partition] = false;
      this.counters.inflight--;
      this.pending.delete(done);
    });
    this.pending.add(done);
  }

  private async send(partition: number, seq: number): Promise<void> {
    const { region, gateway, topic, kind, name } = this.o;
    const clock = this.o.http.clock;
    const id = `${region}/${kind}/${name}/${String(seq).padStart(SEQ_DIGITS, '0')}`;
    const url = `${gateway}/v1/topics/${encodeURIComponent(topic.name)}/records?acks=all`;
    const body = { records: [{ value: id, partition }] };
    const sentAtMs = clock.nowMs();
    let retries = 0;
    let outcome: ProduceOutcome;
    for (;;) {
      const answer = await requestJson(url, { method: 'POST', body, timeoutMs: this.o.requestTimeoutMs }, this.o.http);
      const c = classifyProduce(answer, clock.nowMs());
      if (c.kind === 'acked') {
        outcome = { kind: 'acked', offset: c.offset, atMs: clock.nowMs() };
        break;
      }
      if (c.kind !== 'retry') {
        outcome = { kind: c.kind, code: c.code, atMs: clock.nowMs() };
        break;
      }
      // Refused before anything was written: the same id again, unless the run is over.
      if (retries >= PRODUCE_RETRIES_MAX || this.stopping || !(await sleepOn(clock, c.retryAfterMs, this.stop$.signal))) {
        outcome = { kind: 'failed', code: c.code, atMs: clock.nowMs() };
        break;
      }
      retries++;
      this.counters.retries++;
    }
    this.o.onRecord({ id, region, topic: topic.name, partition, producer: `${region}/${kind}/${name}`, seq, sentAtMs, outcome, retries });
  }
}
