/**
 * The region's ingress history as every gateway of the region wrote it to `__ingress_history`:
 * read back whole at start, then tailed (so gateways see each other's steps), summed by step
 * over the gateways, cut at the retention. `steps()` is the region's closed steps, oldest first
 * and contiguous (a step no gateway wrote, the region down or idle, is zeros).
 *
 * `start()` returns at once and is not to be awaited by a process's start: the cell may still be
 * coming up, and the read retries in the background until the topic answers.
 */
import { silentLogger, toEdgeqError, type Clock, type Logger, type TimerHandle } from '../../core/index.ts';
import type { IngressStep } from '../../../forecast/planner/types.ts';
import { decodeIngressStep, type IngressStepRecord } from './codec.ts';

/**
 * Region steps held in memory (and answered by `steps()`): 28 days at the default 60 s step is
 * 40 320; at 1 s the newest 50 000 (13.9 hours) are kept.
 */
export const HISTORY_STEPS_MAX = 50_000;
/** Gateways counted per step: a region runs a handful; more are ignored (and logged once). */
export const GATEWAYS_PER_STEP_MAX = 64;
/** Records read back at start: the newest this many (50 000 steps × a few gateways). */
export const READ_BACK_RECORDS_MAX = 200_000;
/** Backoff between attempts while the topic does not answer, doubling up to the max. */
export const SOURCE_RETRY_MS_MIN = 200;
export const SOURCE_RETRY_MS_MAX = 5_000;
/** Longest one poll of the tail waits for records. */
export const TAIL_POLL_MS = 1_000;

/** One record of the topic, as the source hands it over. */
export interface HistoryRecord {
  key: Buffer | null;
  value: Buffer | null;
}

/** Where the records come from (the topic through a consumer; an array in tests). */
export interface HistorySource {
  /** Makes the topic ready to read from the start (creating it if needed); throws while it does not answer. */
  open(): Promise<void>;
  /** Records after the last ones returned, waiting up to `waitMs`; `caughtUp` once the read-back reached the end the topic had at open. */
  poll(waitMs: number): Promise<{ records: HistoryRecord[]; caughtUp: boolean }>;
  close(): Promise<void>;
}

export interface IngressHistoryOptions {
  source: HistorySource;
  stepMs: number;
  retentionMs: number;
  clock: Clock;
  logger?: Logger;
  /** Bound on the steps kept; default HISTORY_STEPS_MAX. */
  stepsMax?: number;
}

type StepListener = (step: IngressStep) => void;

export class IngressHistory {
  private readonly logger: Logger;
  private readonly stepsMax: number;
  /** t → member → that gateway's step (a step written twice after a retry counts once). */
  private readonly byT = new Map<number, Map<string, IngressStepRecord>>();
  private readonly listeners = new Set<StepListener>();
  private loop: Promise<void> | null = null;
  private stepTimer: TimerHandle | null = null;
  private wake: (() => void) | null = null;
  private closed = false;
  private isReady = false;
  private badRecords = 0;
  private otherStepRecords = 0;
  private warnedGateways = false;

  constructor(private readonly o: IngressHistoryOptions) {
    this.logger = (o.logger ?? silentLogger).child({ component: 'ingress-history' });
    this.stepsMax = o.stepsMax ?? HISTORY_STEPS_MAX;
  }

  /** Starts reading in the background; returns at once. */
  start(): void {
    if (this.loop || this.closed) return;
    this.loop = this.run().catch((err: unknown) => this.logger.error({ err }, 'ingress history stopped'));
    this.scheduleStepEvent();
  }

  /** True once the history held at start has been read back. */
  ready(): boolean {
    return this.isReady;
  }

  /** The region's closed steps, oldest first, contiguous, within the retention. */
  steps(): IngressStep[] {
    const { from, until } = this.window();
    if (from === null) return [];
    const out: IngressStep[] = [];
    for (let t = from; t < until; t += this.o.stepMs) out.push(this.stepAt(t));
    return out;
  }

  /** The latest closed step, or null while nothing is known. */
  lastStep(): IngressStep | null {
    const { from, until } = this.window();
    return from === null || from >= until ? null : this.stepAt(until - this.o.stepMs);
  }

  /** Region steps held: what `steps()` would return. */
  size(): number {
    const { from, until } = this.window();
    return from === null ? 0 : Math.max(0, (until - from) / this.o.stepMs);
  }

  /** Records that were not steps (bad bytes) and steps of another step length (the flag changed). */
  skipped(): { invalid: number; otherStep: number } {
    return { invalid: this.badRecords, otherStep: this.otherStepRecords };
  }

  /** Calls `cb` with each step as it closes (after the read-back); returns the unsubscribe. */
  on(event: 'step', cb: StepListener): () => void {
    if (event !== 'step') throw new Error(`unknown event ${String(event)}`);
    this.listeners.add(cb);
    return () => this.listeners.delete(cb);
  }

  /** Takes one record of the topic (exposed for the source's tests; the loop calls it). */
  ingest(rec: HistoryRecord): void {
    let s: IngressStepRecord;
    try {
      s = decodeIngressStep(rec.key, rec.value);
    } catch {
      this.badRecords++;
      return;
    }
    if (s.stepMs !== this.o.stepMs) {
      // Written under another --ingress-step-ms: not comparable step by step, so not summed.
      this.otherStepRecords++;
      return;
    }
    if (s.t < this.o.clock.nowMs() - this.o.retentionMs) return;
    let members = this.byT.get(s.t);
    if (!members) {
      members = new Map();
      this.byT.set(s.t, members);
      this.trim();
    }
    if (!members.has(s.member) && members.size >= GATEWAYS_PER_STEP_MAX) {
      if (!this.warnedGateways) this.logger.warn({ limit: GATEWAYS_PER_STEP_MAX }, 'more gateways in one step than GATEWAYS_PER_STEP_MAX: the rest are ignored');
      this.warnedGateways = true;
      return;
    }
    members.set(s.member, s);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stepTimer?.cancel();
    this.wake?.();
    await this.loop;
    await this.o.source.close().catch(() => undefined);
  }

  /** [from, until): from the oldest step known within the retention to the last closed boundary. */
  private window(): { from: number | null; until: number } {
    const step = this.o.stepMs;
    const now = this.o.clock.nowMs();
    const until = Math.floor(now / step) * step;
    const cut = Math.ceil((now - this.o.retentionMs) / step) * step;
    let oldest: number | null = null;
    for (const t of this.byT.keys()) if (t < until && t >= cut && (oldest === null || t < oldest)) oldest = t;
    if (oldest === null) return { from: null, until };
    return { from: Math.max(oldest, until - this.stepsMax * step), until };
  }

  private stepAt(t: number): IngressStep {
    let records = 0;
    let recordsMax = 0;
    let bytes = 0;
    let bytesMax = 0;
    // Gateways peak at different moments: the region's max is at most the sum of theirs.
    for (const s of this.byT.get(t)?.values() ?? []) {
      records += s.records;
      recordsMax += s.recordsMax;
      bytes += s.bytes;
      bytesMax += s.bytesMax;
    }
    return { t, records, recordsMax, bytes, bytesMax };
  }

  /** Drops steps past the retention and beyond the bound (oldest first). */
  private trim(): void {
    const cut = this.o.clock.nowMs() - this.o.retentionMs;
    for (const t of this.byT.keys()) if (t < cut) this.byT.delete(t);
    if (this.byT.size <= this.stepsMax) return;
    const ts = [...this.byT.keys()].sort((a, b) => a - b);
    for (const t of ts.slice(0, ts.length - this.stepsMax)) this.byT.delete(t);
  }

  private scheduleStepEvent(): void {
    if (this.closed) return;
    const step = this.o.stepMs;
    const now = this.o.clock.nowMs();
    // A quarter step after the boundary: the gateways' appends of the step have landed by then.
    const at = (Math.floor(now / step) + 1) * step + step / 4;
    this.stepTimer = this.o.clock.setTimeout(() => {
      this.trim();
      const last = this.isReady ? this.lastStep() : null;
      if (last) for (const cb of [...this.listeners]) cb(last);
      this.scheduleStepEvent();
    }, at - now);
  }

  private async run(): Promise<void> {
    let backoffMs = SOURCE_RETRY_MS_MIN;
    while (!this.closed) {
      try {
        await this.o.source.open();
        break;
      } catch (err) {
        this.logger.debug({ err: toEdgeqError(err).code, retryMs: backoffMs }, 'ingress history topic not ready yet');
        await this.pause(backoffMs);
        backoffMs = Math.min(SOURCE_RETRY_MS_MAX, backoffMs * 2);
      }
    }
    backoffMs = SOURCE_RETRY_MS_MIN;
    while (!this.closed) {
      try {
        const { records, caughtUp } = await this.o.source.poll(TAIL_POLL_MS);
        for (const r of records) this.ingest(r);
        if (caughtUp && !this.isReady) {
          this.isReady = true;
          this.logger.info({ steps: this.size() }, 'ingress history read back');
        }
        backoffMs = SOURCE_RETRY_MS_MIN;
      } catch (err) {
        if (this.closed) return;
        this.logger.debug({ err: toEdgeqError(err).code }, 'ingress history poll failed; retrying');
        await this.pause(backoffMs);
        backoffMs = Math.min(SOURCE_RETRY_MS_MAX, backoffMs * 2);
      }
    }
  }

  /** Waits `ms` on the clock, or less when closed. */
  private pause(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = this.o.clock.setTimeout(() => {
        this.wake = null;
        resolve();
      }, ms);
      this.wake = () => {
        timer.cancel();
        this.wake = null;
        resolve();
      };
    });
  }
}
