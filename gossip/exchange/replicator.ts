/**
 * One replicator: the records of one origin region for one partition of a global topic, applied
 * in this region. It fetches the origin's batches (from the origin itself, or through a region
 * that already holds them when the direct link is down), and appends them to the local leader
 * with acks=all, one batch at a time and in origin order.
 *
 * The cursor is the only state and it lives in the log: at start, and after anything went wrong
 * locally, it is read back from the local leader (the highest origin offset it holds). A batch at
 * or below the cursor is skipped, here and again at the leader (its origin guard), so however many
 * paths a batch comes by, it is applied once.
 *
 * Completeness comes from how the source is read, not from the origin offsets (an origin's own
 * offsets are not contiguous: its log also holds what it applied from others): the origin's log
 * is scanned without holes from cursor + 1, each fetch continuing where the last one's scan ended.
 * The one way records can be missing is the origin's retention deleting them first: the fetch then
 * falls below its log start, and that range is reported as a gap before the scan goes on.
 *
 * One fetch runs ahead of the appends (a link of 50 ms RTT would otherwise idle half the time).
 */
import type { Clock } from '../../src/core/index.ts';
import { EdgeqError, toEdgeqError, type Logger } from '../../src/core/index.ts';
import { readBatchHeader, splitBatches } from '../../src/log/index.ts';
import { backoffDelayMs } from '../../src/client/index.ts';
import type { ApplyResult, CellAccess, OriginFetchResult } from './cell-access.ts';
import { traceApplied, traceNowMs } from '../../src/tracing/index.ts';
import type { LinkBudget } from './link-budget.ts';
import type { ExchangeLimits } from './limits.ts';

/** A range of an origin's records that its retention deleted before this region fetched them. */
export interface GapEvent {
  origin: string;
  topic: string;
  partition: number;
  firstMissingOriginOffset: number;
  lastMissingOriginOffset: number;
  records: number;
  detectedAtMs: number;
}

/** What the exchange hands each replicator. */
export interface ReplicatorDeps {
  cells: CellAccess;
  clock: Clock;
  logger: Logger;
  limits: ExchangeLimits;
  /** The region to fetch from now: the origin when reachable, else a region ahead of `cursor`; null: none. */
  pickSource(origin: string, topic: string, partition: number, cursor: number, exclude: ReadonlySet<string>): string | null;
  /** A fetch from `source` failed as a link fails (no answer, connection lost): the exchange stops using it until it answers again. */
  sourceFailed(source: string, err: unknown): void;
  /** The budget of the link to `source`. */
  link(source: string): LinkBudget;
  onGap(gap: GapEvent): void;
  /** Called after every applied batch. */
  onApplied(r: Replicator, records: number, bytes: number): void;
  random?: () => number;
}

/** Batches in one run of applied batches (the broker takes at most PRODUCE_APPLIED_BATCHES_MAX, 1024). */
const APPLY_RUN_BATCHES_MAX = 512;

/** `scanFrom` that continues the fetch session. */
const SCAN_CONTINUE = -2;

/** Errors that say the link (or the region behind it) is down, not that this request was wrong. */
const LINK_FAILURES = new Set(['CONNECTION_CLOSED', 'REQUEST_TIMED_OUT', 'TIMEOUT', 'BROKER_NOT_AVAILABLE']);

export interface ReplicatorStatus {
  origin: string;
  topic: string;
  partition: number;
  /** Highest origin offset applied here; -1 before the first. */
  appliedOriginOffset: number;
  /** Origin offsets the best-known head of the origin is ahead of the cursor. */
  lagRecords: number;
  /** Origin append to local apply of the newest applied batch; while behind, at least the time since falling behind. */
  lagMs: number;
  source: string | null;
  stalled: boolean;
  lastError: string | null;
  appliedRecords: number;
}

interface Fetched {
  source: string;
  res: OriginFetchResult;
}

export class Replicator {
  /** Highest origin offset in the local log; undefined until read back from it. */
  private cursor: number | undefined;
  /** Best-known highest origin offset of the origin (from fetch answers and the mesh). */
  private head = -1;
  private lastApplyLagMs = 0;
  private behindSinceMs: number | null = null;
  private lastProgressMs: number;
  private source: string | null = null;
  private lastError: string | null = null;
  private appliedRecords = 0;
  private stalled = false;
  private attempt = 0;
  /** Relays found to have lost some of the origin's records past the cursor, with how far (skipped until the cursor passes it). */
  private readonly incompleteRelays = new Map<string, number>();
  /** Ends the backoff sleep under way, if any. */
  private wakeUp: (() => void) | null = null;
  /** Fetch sessions started (their ids are unique per replicator). */
  private sessions = 0;
  /**
   * A random tag in every session id: the key alone is the same in every region that applies this
   * origin partition. The origin's broker scopes sessions by connection anyway (two clients that
   * shared a session each got every other record); the tag keeps ids apart in its logs too.
   */
  private readonly sessionTag: string;
  private aborter = new AbortController();
  private loop: Promise<void> | null = null;
  private stopped = false;

  constructor(
    readonly origin: string,
    readonly topic: string,
    readonly partition: number,
    private readonly deps: ReplicatorDeps,
  ) {
    this.lastProgressMs = deps.clock.monotonicMs();
    this.sessionTag = Math.floor((deps.random ?? Math.random)() * 2 ** 32).toString(36);
  }

  get key(): string {
    return `${this.origin}/${this.topic}/${this.partition}`;
  }

  start(): void {
    if (this.loop || this.stopped) return;
    this.aborter = new AbortController();
    const signal = this.aborter.signal;
    this.loop = this.run(signal).finally(() => {
      this.loop = null;
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.aborter.abort();
    await this.loop;
  }

  /** Stops the loop and starts it again from the cursor in the log (the stall watchdog's remedy). */
  async restart(reason: string): Promise<void> {
    this.deps.logger.warn({ origin: this.origin, topic: this.topic, partition: this.partition, cursor: this.cursor ?? -1, head: this.head, reason }, 'replicator restarted');
    this.aborter.abort();
    await this.loop;
    this.cursor = undefined;
    this.lastProgressMs = this.deps.clock.monotonicMs();
    this.start();
  }

  /** Ends a backoff sleep now (a link it waited for answers again). */
  wake(): void {
    this.attempt = 0;
    this.wakeUp?.();
  }

  /** A head learned elsewhere (the origin's published readable end). */
  noteHead(head: number): void {
    if (head > this.head) this.head = head;
    this.updateBehind();
  }

  /** The cursor as far as known (-1 before the first read). */
  appliedOriginOffset(): number {
    return this.cursor ?? -1;
  }

  /** True when the origin is known to hold more and the cursor has not moved for `stallMs`. */
  checkStall(): boolean {
    const behind = this.head > (this.cursor ?? -1);
    this.stalled = behind && this.deps.clock.monotonicMs() - this.lastProgressMs > this.deps.limits.stallMs;
    return this.stalled;
  }

  status(): ReplicatorStatus {
    const cursor = this.cursor ?? -1;
    const lagRecords = Math.max(0, this.head - cursor);
    const behindFor = this.behindSinceMs === null ? 0 : this.deps.clock.nowMs() - this.behindSinceMs;
    return {
      origin: this.origin,
      topic: this.topic,
      partition: this.partition,
      appliedOriginOffset: cursor,
      lagRecords,
      lagMs: lagRecords === 0 ? this.lastApplyLagMs : Math.max(this.lastApplyLagMs, behindFor),
      source: this.source,
      stalled: this.stalled,
      lastError: this.lastError,
      appliedRecords: this.appliedRecords,
    };
  }

  private updateBehind(): void {
    const behind = this.head > (this.cursor ?? -1);
    if (!behind) this.behindSinceMs = null;
    else if (this.behindSinceMs === null) this.behindSinceMs = this.deps.clock.nowMs();
  }

  private async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      try {
        await this.session(signal);
      } catch (err) {
        if (signal.aborted) return;
        const e = toEdgeqError(err);
        this.lastError = `${e.code}: ${e.message}`;
        const delay = backoffDelayMs(this.attempt++, { retryBackoffMs: this.deps.limits.backoffMsMin, retryBackoffMsMax: this.deps.limits.backoffMsMax, ...(this.deps.random ? { random: this.deps.random } : {}) });
        this.deps.logger.debug({ replicator: this.key, code: e.code, err: e.message, delayMs: delay }, 'replicator backing off');
        await new Promise<void>((resolve) => {
          this.wakeUp = resolve;
          void sleepFor(this.deps.clock, delay, signal).then(resolve);
        });
        this.wakeUp = null;
      }
    }
  }

  /**
   * Reads the cursor back, then fetches and applies until something fails. Up to
   * `fetchPipelineDepth` fetches are in flight in one fetch session with the source: the first
   * from an explicit position, the others continuing where the one before ends. A failed fetch
   * breaks the session (the ones after it are dropped unread) and a new one starts.
   */
  private async session(signal: AbortSignal): Promise<void> {
    if (this.cursor === undefined) {
      this.cursor = await this.deps.cells.localCursor(this.topic, this.partition, this.origin, signal);
      this.updateBehind();
    }
    let scan = { source: '', from: -1 };
    let fetchedTo = this.cursor;
    let sess: { source: string; id: string } | null = null;
    const pending: Promise<Fetched>[] = [];
    const push = (p: Promise<Fetched>) => {
      // A fetch dropped with its session is nobody's business.
      p.catch(() => undefined);
      pending.push(p);
    };
    const fill = (): void => {
      while (pending.length < this.deps.limits.fetchPipelineDepth) {
        let source: string;
        try {
          source = this.pick();
        } catch (err) {
          if (pending.length === 0) throw err;
          return;
        }
        if (sess && sess.source !== source) {
          if (pending.length > 0) return; // drain the session before switching source
          sess = null;
        }
        if (!sess) {
          if (source !== scan.source) scan = { source, from: source === this.origin ? fetchedTo + 1 : -1 };
          sess = { source, id: `${this.key}#${this.sessionTag}-${this.deps.clock.nowMs()}-${++this.sessions}` };
          push(this.fetch(source, scan.from, fetchedTo, sess.id, signal));
        } else {
          push(this.fetch(source, SCAN_CONTINUE, -1, sess.id, signal));
        }
      }
    };
    fill();
    for (;;) {
      let got: Fetched;
      try {
        got = await pending.shift()!;
      } catch (err) {
        pending.length = 0;
        sess = null;
        const e = toEdgeqError(err);
        if (e.code === 'OFFSET_OUT_OF_RANGE' && typeof e.details.logStartOffset === 'number') {
          // Absent from the map: nothing of the origin's own was deleted; no map at all: unknown.
          const map = e.details.originDeletedUpTo as Record<string, number> | undefined;
          const deleted = map ? (map[this.origin] ?? -1) : undefined;
          this.fellBelowLogStart(scan, e.details.logStartOffset, deleted);
          fetchedTo = this.cursor;
          fill();
          continue;
        }
        throw err;
      }
      // A relay says in every answer how far its retention took the origin's records. The mesh
      // carries the same bound, but later: a relay that lost records past the cursor is dropped
      // here, before anything it sent is applied (it would skip them silently).
      const relayDeleted = got.source === this.origin ? -1 : (got.res.originDeletedUpTo[this.origin] ?? -1);
      if (relayDeleted > (this.cursor ?? -1)) {
        this.incompleteRelays.set(got.source, relayDeleted);
        pending.length = 0;
        sess = null;
        throw new EdgeqError('OFFSET_OUT_OF_RANGE', `relay ${got.source} no longer holds ${this.origin}'s records up to ${relayDeleted} (retention); this region needs them from ${(this.cursor ?? -1) + 1}`, {
          details: { relay: got.source, origin: this.origin, deletedUpTo: relayDeleted },
        });
      }
      this.attempt = 0;
      this.source = got.source;
      const batches = splitBatches(got.res.records);
      const known = got.res.originCursors[this.origin];
      if (typeof known === 'number') this.noteHead(known);
      for (const b of batches) {
        const h = readBatchHeader(b);
        if (h.originRegion === this.origin) fetchedTo = Math.max(fetchedTo, h.originOffset + h.lastOffsetDelta);
      }
      scan.from = got.res.scannedTo;
      fill();
      await this.applyAll(batches, signal);
      if (batches.length === 0 && this.head <= this.cursor) this.lastProgressMs = this.deps.clock.monotonicMs();
    }
  }

  private pick(): string {
    const cursor = this.cursor ?? -1;
    for (const [relay, deleted] of this.incompleteRelays) if (deleted <= cursor) this.incompleteRelays.delete(relay);
    const source = this.deps.pickSource(this.origin, this.topic, this.partition, cursor, new Set(this.incompleteRelays.keys()));
    if (source === null) {
      throw new EdgeqError('BROKER_NOT_AVAILABLE', `no region to fetch ${this.origin}'s records of ${this.topic}-${this.partition} from`, { details: { origin: this.origin } });
    }
    return source;
  }

  private async fetch(source: string, scanFrom: number, after: number, session: string, signal: AbortSignal): Promise<Fetched> {
    const link = this.deps.link(source);
    const grant = await link.acquire(this.key, this.deps.limits.fetchBytesMax, signal);
    let used = 0;
    try {
      const res = await this.deps.cells.fetch(
        source,
        { topic: this.topic, partition: this.partition, origin: this.origin, scanFrom, afterOriginOffset: after, maxBytes: grant.maxBytes, maxWaitMs: this.deps.limits.fetchWaitMs, session },
        signal,
      );
      used = res.records.length;
      return { source, res };
    } catch (err) {
      if (!signal.aborted && LINK_FAILURES.has(toEdgeqError(err).code)) this.deps.sourceFailed(source, err);
      throw err;
    } finally {
      link.settle(grant, used);
    }
  }

  /** The scan fell below the source's log start: from the origin that is a retention gap, reported; from a relay, look again. */
  private fellBelowLogStart(scan: { source: string; from: number }, logStart: number, ownDeletedUpTo: number | undefined): void {
    const cursor = this.cursor ?? -1;
    if (scan.source !== this.origin) {
      scan.from = -1;
      return;
    }
    const first = Math.max(cursor + 1, scan.from);
    // The origin says up to where its own records were deleted: offsets past that (and below its
    // log start) held records it had applied from others, which are not missing from this origin.
    const last = Math.min(logStart - 1, ownDeletedUpTo ?? logStart - 1);
    if (last >= first) {
      const gap: GapEvent = { origin: this.origin, topic: this.topic, partition: this.partition, firstMissingOriginOffset: first, lastMissingOriginOffset: last, records: last - first + 1, detectedAtMs: this.deps.clock.nowMs() };
      this.deps.logger.error(gap, 'retention gap: the origin deleted records before this region fetched them');
      this.deps.onGap(gap);
    }
    scan.from = logStart;
  }

  /**
   * Applies the batches in origin order, in runs of consecutive batches (one append request each,
   * at most `applyRunBytesMax`), up to `applyInflightMax` runs at once: each run is conditional on
   * the cursor the one before it leaves, so if one does not land, none after it can
   * (ORIGIN_CURSOR_MISMATCH) and there is never a hole. Results are taken in order; after the
   * first failure the rest are waited out and the cursor is read back from the log.
   */
  private async applyAll(batches: Buffer[], signal: AbortSignal): Promise<void> {
    interface Run {
      parts: Buffer[];
      bytes: number;
      records: number;
      last: number;
      maxTimestamp: number;
    }
    interface InFlight {
      run: Run;
      done: Promise<ApplyResult>;
    }
    const fetchedMs = traceNowMs();
    const queue: InFlight[] = [];
    let failure: unknown = null;
    const settle = async (f: InFlight): Promise<void> => {
      let applied: ApplyResult;
      try {
        applied = await f.done;
      } catch (err) {
        failure ??= err;
        return;
      }
      traceApplied({ topic: this.topic, partition: this.partition, batches: f.run.parts, startMs: fetchedMs, baseOffset: applied.baseOffset, duplicate: applied.duplicate });
      if (failure !== null) return; // the log will say what landed after a failed run
      this.cursor = f.run.last;
      this.appliedRecords += f.run.records;
      this.lastApplyLagMs = Math.max(0, this.deps.clock.nowMs() - f.run.maxTimestamp);
      this.lastProgressMs = this.deps.clock.monotonicMs();
      this.lastError = null;
      this.stalled = false;
      this.updateBehind();
      this.deps.onApplied(this, f.run.records, f.run.bytes);
    };
    let expected = this.cursor ?? -1;
    const send = async (run: Run): Promise<void> => {
      while (queue.length >= this.deps.limits.applyInflightMax) await settle(queue.shift()!);
      if (failure !== null || signal.aborted) return;
      const done = this.deps.cells.apply(this.topic, this.partition, run.parts.length === 1 ? run.parts[0]! : Buffer.concat(run.parts), signal, expected);
      done.catch(() => undefined);
      queue.push({ run, done });
      expected = run.last;
    };
    let run: Run | null = null;
    let runExpectedEnd = expected;
    for (const b of batches) {
      if (signal.aborted || failure !== null) break;
      const h = readBatchHeader(b);
      if (h.originRegion !== this.origin) continue; // the source filters; a stray batch is not ours to apply
      const last = h.originOffset + h.lastOffsetDelta;
      if (last <= runExpectedEnd) continue;
      if (h.originOffset <= runExpectedEnd) {
        failure = new EdgeqError('ORIGIN_OVERLAP', `${this.origin}'s batch ${h.originOffset}..${last} of ${this.topic}-${this.partition} overlaps the cursor ${runExpectedEnd}`, {
          details: { origin: this.origin, cursor: runExpectedEnd, base: h.originOffset, last },
        });
        break;
      }
      if (run && (run.bytes + b.length > this.deps.limits.applyRunBytesMax || run.parts.length >= APPLY_RUN_BATCHES_MAX)) {
        await send(run);
        run = null;
      }
      run ??= { parts: [], bytes: 0, records: 0, last, maxTimestamp: 0 };
      run.parts.push(b);
      run.bytes += b.length;
      run.records += h.recordCount;
      run.last = last;
      run.maxTimestamp = Math.max(run.maxTimestamp, h.maxTimestamp);
      runExpectedEnd = last;
    }
    if (run && failure === null && !signal.aborted) await send(run);
    while (queue.length > 0) await settle(queue.shift()!);
    if (failure !== null) {
      // Whatever happened at the local leader (a new one, a truncated tail, a refused append), the log knows.
      this.cursor = undefined;
      throw failure;
    }
  }
}

function sleepFor(clock: Clock, ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = clock.setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      t.cancel();
      resolve();
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
