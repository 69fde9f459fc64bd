/**
 * Samples one gateway's cumulative ingress and turns it into steps: at each step boundary
 * (multiples of stepMs of wall-clock time) the step's mean (Δtotal / step seconds) and max (the
 * largest sampled rate in it) are handed to the appender. The gateway's totals start at zero when
 * it starts, so a first, partial step divided by the whole step is still its true mean; the sum
 * of mean × step over the steps is exactly what went through.
 *
 * Steps the appender could not write (the cell is down) wait in a buffer bounded by
 * PENDING_STEPS_MAX and are retried oldest first; past the bound the oldest is dropped and counted.
 */
import { silentLogger, toEdgeqError, type Clock, type Logger, type TimerHandle } from '../../core/index.ts';
import type { IngressStepRecord } from './codec.ts';

/**
 * Steps kept while the cell does not take them: at the default 60 s step, 1440 is a day of
 * outage; at the tests' 1 s, 24 minutes. 1440 × 45 bytes is about 65 KB.
 */
export const PENDING_STEPS_MAX = 1440;
/** Steps written by one append (one produce): a catch-up after an outage goes in a few. */
export const APPEND_STEPS_MAX = 100;
/** Wait before retrying a failed append. */
export const APPEND_RETRY_MS = 1_000;
/** Sampling never slower than this (a one-hour step still sees one-second peaks). */
export const SAMPLE_MS_MAX = 1_000;

export type IngressTotals = () => { records: number; bytes: number };
/** Writes steps, oldest first; rejects when the cell did not take them (all of them are retried). */
export type StepAppender = (steps: readonly IngressStepRecord[]) => Promise<void>;

export interface IngressRecorderOptions {
  member: string;
  stepMs: number;
  totals: IngressTotals;
  append: StepAppender;
  clock: Clock;
  logger?: Logger;
  /** Bound on the pending buffer; default PENDING_STEPS_MAX. */
  pendingStepsMax?: number;
}

/** The sampling interval of a step: min(1000, stepMs / 4). */
export function sampleMsOf(stepMs: number): number {
  return Math.min(SAMPLE_MS_MAX, stepMs / 4);
}

export class IngressRecorder {
  private readonly logger: Logger;
  private readonly pendingMax: number;
  private readonly pending: IngressStepRecord[] = [];
  private timer: TimerHandle | null = null;
  private retryTimer: TimerHandle | null = null;
  private appending = false;
  private closed = false;
  private stepStart = 0;
  private stepTotals = { records: 0, bytes: 0 };
  private last = { atMs: 0, records: 0, bytes: 0 };
  private maxRecords = 0;
  private maxBytes = 0;
  private droppedSteps = 0;
  private writtenSteps = 0;

  constructor(private readonly o: IngressRecorderOptions) {
    this.logger = (o.logger ?? silentLogger).child({ component: 'ingress-recorder' });
    this.pendingMax = o.pendingStepsMax ?? PENDING_STEPS_MAX;
  }

  /** Starts sampling (synchronous: nothing here waits on the cell). */
  start(): void {
    if (this.timer || this.closed) return;
    const now = this.o.clock.nowMs();
    const totals = this.o.totals();
    this.stepStart = Math.floor(now / this.o.stepMs) * this.o.stepMs;
    // Traffic before this start went through no gateway of ours: the step's baseline is zero.
    this.stepTotals = { records: 0, bytes: 0 };
    this.last = { atMs: now, ...totals };
    this.schedule();
  }

  /** Steps dropped because the pending buffer was full. */
  dropped(): number {
    return this.droppedSteps;
  }

  /** Steps waiting for the cell. */
  pendingSteps(): number {
    return this.pending.length;
  }

  /** Steps the appender took. */
  written(): number {
    return this.writtenSteps;
  }

  /** Stops sampling; pending steps are given one last try (not awaited past `close`'s answer). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.timer?.cancel();
    this.retryTimer?.cancel();
  }

  private schedule(): void {
    if (this.closed) return;
    const now = this.o.clock.nowMs();
    const boundary = this.stepStart + this.o.stepMs;
    const nextSample = this.last.atMs + sampleMsOf(this.o.stepMs);
    this.timer = this.o.clock.setTimeout(() => this.tick(), Math.max(0, Math.min(boundary, nextSample) - now));
  }

  private tick(): void {
    if (this.closed) return;
    const now = this.o.clock.nowMs();
    const totals = this.o.totals();
    const dtS = (now - this.last.atMs) / 1000;
    if (dtS > 0) {
      this.maxRecords = Math.max(this.maxRecords, (totals.records - this.last.records) / dtS);
      this.maxBytes = Math.max(this.maxBytes, (totals.bytes - this.last.bytes) / dtS);
    }
    this.last = { atMs: now, ...totals };
    if (now >= this.stepStart + this.o.stepMs) this.closeStep(now, totals);
    this.schedule();
  }

  /**
   * Closes the current step with everything counted so far. A timer that fired more than a step
   * late (a stalled event loop) puts the whole stall in this step; the steps it skipped are not
   * written, and the history reads them as zeros.
   */
  private closeStep(now: number, totals: { records: number; bytes: number }): void {
    const stepS = this.o.stepMs / 1000;
    const step: IngressStepRecord = {
      member: this.o.member,
      t: this.stepStart,
      stepMs: this.o.stepMs,
      records: (totals.records - this.stepTotals.records) / stepS,
      recordsMax: this.maxRecords,
      bytes: (totals.bytes - this.stepTotals.bytes) / stepS,
      bytesMax: this.maxBytes,
    };
    this.stepTotals = { ...totals };
    this.stepStart = Math.floor(now / this.o.stepMs) * this.o.stepMs;
    this.maxRecords = 0;
    this.maxBytes = 0;
    this.pending.push(step);
    while (this.pending.length > this.pendingMax) {
      this.pending.shift();
      this.droppedSteps++;
    }
    this.flush();
  }

  private flush(): void {
    if (this.appending || this.closed || this.pending.length === 0) return;
    this.retryTimer?.cancel();
    this.retryTimer = null;
    this.appending = true;
    const batch = this.pending.slice(0, APPEND_STEPS_MAX);
    this.o
      .append(batch)
      .then(
        () => {
          // Steps dropped meanwhile were the oldest: what was sent is still at the head, minus those.
          const sent = batch.filter((s) => this.pending.includes(s)).length;
          this.pending.splice(0, sent);
          this.writtenSteps += batch.length;
          this.appending = false;
          this.flush();
        },
        (err: unknown) => {
          this.appending = false;
          this.logger.debug({ err: toEdgeqError(err).code, pending: this.pending.length }, 'ingress steps not written yet; retrying');
          if (!this.closed) this.retryTimer = this.o.clock.setTimeout(() => this.flush(), APPEND_RETRY_MS);
        },
      );
  }
}
