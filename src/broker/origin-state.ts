/**
 * Per-origin state of one partition of a global topic: for each region whose records were applied
 * here, its *cursor* (the highest origin offset held in the local log) and a bounded sparse index
 * from origin offsets to local offsets.
 *
 * It is an append guard (like ProducerState), so the check runs on the log's writer in append
 * order and sees every earlier batch, staged ones included. A leader append of an origin-tagged
 * batch whose origin offsets are all at or below the cursor is a duplicate (nothing written); one
 * that straddles the cursor is refused (ORIGIN_OVERLAP); one past it is written. Origin offsets of
 * one origin need not be contiguous (the origin's log also holds records it applied from others),
 * so a jump ahead is legal here: finding gaps is the replicator's job. Follower appends are
 * recorded, never refused. The log is the only truth: the state is rebuilt from the batch headers
 * at open and after a truncation or reset, so there is no snapshot to disagree with it.
 */
import { EdgeqError, systemClock, type Clock } from '../core/index.ts';
import { scanBatchHeaders, type AppendGuard, type AppendResult, type BatchHeader, type PartitionLog } from '../log/index.ts';

/**
 * Index entries kept per origin. Full, every other entry is dropped, so the index always spans
 * the whole log at a coarser step: 4096 entries of 48 bytes is ~200 KiB per origin at worst, and
 * a lookup scans forward at most (log batches / 4096) batches' worth from where it lands.
 */
export const ORIGIN_INDEX_ENTRIES_MAX = 4096;
/**
 * Origin regions tracked per partition. Regions are sites (a handful); a leader refuses a batch
 * from one more origin than this rather than growing without bound.
 */
export const ORIGIN_REGIONS_MAX = 256;

/** One applied batch of an origin: its origin offsets and where it sits in the local log. */
interface IndexEntry {
  originBase: number;
  originLast: number;
  localBase: number;
}

interface OriginTrack {
  /** Highest origin offset held in the local log. */
  cursor: number;
  /** Local offsets and write time of the batch that holds the cursor. */
  cursorLocalBase: number;
  cursorLocalLast: number;
  cursorAppendMs: number;
  /** Sorted by localBase and (since the leader keeps each origin's order) by origin offset. */
  index: IndexEntry[];
  /**
   * Highest origin offset of this origin's records that retention deleted here (-1: none), or a
   * bound above it. A region relays an origin's records only to a region whose cursor is at or
   * past this: below it the relay would skip what it no longer holds, silently.
   */
  deletedUpTo: number;
}

/**
 * Runs of this region's own records (consecutive local offsets without an origin) remembered per
 * partition. Past the bound, neighbouring runs merge (the foreign records between them counted as
 * own: an over-estimate, which only makes a reported gap wider, never hides one).
 */
export const OWN_RUNS_MAX = 4096;

interface StagedBatch {
  origin: string;
  entry: IndexEntry;
  localLast: number;
  appendMs: number;
}

/** Hooks of an OriginState. */
export interface OriginStateOptions {
  clock?: Clock;
  /** Overrides ORIGIN_INDEX_ENTRIES_MAX (tests of the thinning). */
  indexEntriesMax?: number;
}

/** Origin cursors and index of one partition; install through `composeGuards` with the producer state. */
export class OriginState implements AppendGuard {
  private readonly committed = new Map<string, OriginTrack>();
  private staged: StagedBatch[] = [];
  /** Runs [first, last] of own records in the local log, oldest first (bounded by OWN_RUNS_MAX). */
  private ownRuns: [number, number][] = [];
  private stagedOwn: [number, number][] = [];
  /** Highest own offset retention deleted (or a bound above it); -1: none. */
  private ownDeleted = -1;
  private readonly clock: Clock;
  private readonly indexEntriesMax: number;
  private logStart: () => number = () => 0;

  constructor(options: OriginStateOptions = {}) {
    this.clock = options.clock ?? systemClock;
    this.indexEntriesMax = Math.max(2, options.indexEntriesMax ?? ORIGIN_INDEX_ENTRIES_MAX);
  }

  /** Origin regions with records in the local log. */
  get size(): number {
    return this.committed.size;
  }

  /** The highest origin offset held per origin region (own writes are not here: they carry no origin). */
  cursors(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [origin, t] of this.committed) out[origin] = t.cursor;
    return out;
  }

  /** Per origin, the highest of its origin offsets retention deleted here (or a bound above it); absent: none. */
  deletedUpTo(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [origin, t] of this.committed) {
      this.pruneBelow(t, this.logStart());
      if (t.deletedUpTo >= 0) out[origin] = t.deletedUpTo;
    }
    return out;
  }

  /**
   * The last offset of this region's own records that a consumer can read (below `hw`): what the
   * other regions' replicators are behind. Records applied from others do not count, so a region
   * that only applied is not "ahead" of anyone.
   */
  ownHead(hw: number): number {
    for (let i = this.ownRuns.length - 1; i >= 0; i--) {
      const [first, last] = this.ownRuns[i]!;
      if (first < hw) return Math.min(last, hw - 1);
    }
    return -1;
  }

  /**
   * The highest of this region's own offsets that retention deleted (or a bound above it), -1 for
   * none: a replicator that fell below the log start lost own records only up to here (offsets
   * between are records this region had applied from others, which are not its to report).
   */
  ownDeletedUpTo(): number {
    const start = this.logStart();
    let n = 0;
    while (n < this.ownRuns.length && this.ownRuns[n]![0] < start) {
      const [, last] = this.ownRuns[n]!;
      this.ownDeleted = Math.max(this.ownDeleted, Math.min(last, start - 1));
      if (last >= start) {
        this.ownRuns[n]![0] = start;
        break;
      }
      n++;
    }
    if (n > 0) this.ownRuns.splice(0, n);
    return this.ownDeleted;
  }

  /** Index entries held for `origin` (bounded by ORIGIN_INDEX_ENTRIES_MAX). */
  indexEntries(origin: string): number {
    return this.committed.get(origin)?.index.length ?? 0;
  }

  /** The cursor of one origin, -1 when none of its records are held. */
  cursor(origin: string): number {
    return this.committed.get(origin)?.cursor ?? -1;
  }

  /**
   * Where to start scanning the local log for `origin`'s records after `afterOriginOffset`: the
   * local base of the last index entry whose origin offsets are all at or below it, else the log
   * start. Conservative (the scan may pass a few batches it skips), never past a record needed.
   */
  locate(origin: string, afterOriginOffset: number): number {
    const start = this.logStart();
    const t = this.committed.get(origin);
    if (!t) return start;
    this.pruneBelow(t, start);
    const i = lastAtOrBelow(t.index, afterOriginOffset);
    return i < 0 ? start : Math.max(start, t.index[i]!.localBase);
  }

  /** The AppendGuard check alone: `inspect`, then `record` when it passes. */
  check(h: BatchHeader, placement: { baseOffset: number; leaderAppend: boolean; originCursorExpected?: number }): AppendResult | null {
    const dup = this.inspect(h, placement);
    if (dup) return dup;
    this.record(h, placement);
    return null;
  }

  /**
   * The leader's decision on an origin-tagged batch, without staging it: null (write it), the
   * duplicate's result (its records are held already), or ORIGIN_OVERLAP. A batch without an
   * origin, and any follower append, pass.
   */
  inspect(h: BatchHeader, placement: { leaderAppend: boolean; originCursorExpected?: number }): AppendResult | null {
    if (h.originRegion === null || !placement.leaderAppend) return null;
    const origin = h.originRegion;
    const base = h.originOffset;
    const last = base + h.lastOffsetDelta;
    const cursor = this.effectiveCursor(origin);
    if (last <= cursor) return this.duplicateOf(origin, base, last);
    if (placement.originCursorExpected !== undefined && placement.originCursorExpected !== cursor) {
      throw new EdgeqError('ORIGIN_CURSOR_MISMATCH', `batch of origin ${origin} at ${base}..${last} expects the cursor at ${placement.originCursorExpected}, it is at ${cursor}`, {
        details: { origin, cursor, expected: placement.originCursorExpected, base, last },
      });
    }
    if (base <= cursor) {
      throw new EdgeqError(
        'ORIGIN_OVERLAP',
        `batch of origin ${origin} holds origin offsets ${base}..${last}, but offsets up to ${cursor} are already held: it overlaps them`,
        { details: { origin, cursor, base, last } },
      );
    }
    if (cursor < 0 && !this.committed.has(origin) && !this.staged.some((s) => s.origin === origin) && this.committed.size >= ORIGIN_REGIONS_MAX) {
      throw new EdgeqError('INVALID_REQUEST', `a partition tracks at most ${ORIGIN_REGIONS_MAX} origin regions; ${origin} would be one more`, {
        details: { origin, originRegionsMax: ORIGIN_REGIONS_MAX },
      });
    }
    return null;
  }

  /** Stages a batch that is being written at `placement.baseOffset` (no checks). */
  record(h: BatchHeader, placement: { baseOffset: number }, appendMs = this.clock.nowMs()): void {
    if (h.originRegion === null) {
      this.stagedOwn.push([placement.baseOffset, placement.baseOffset + h.lastOffsetDelta]);
      return;
    }
    this.staged.push({
      origin: h.originRegion,
      entry: { originBase: h.originOffset, originLast: h.originOffset + h.lastOffsetDelta, localBase: placement.baseOffset },
      localLast: placement.baseOffset + h.lastOffsetDelta,
      appendMs,
    });
  }

  commit(): void {
    for (const s of this.staged) this.apply(s);
    this.staged = [];
    for (const [first, last] of this.stagedOwn) {
      const tail = this.ownRuns[this.ownRuns.length - 1];
      if (tail && tail[1] + 1 === first) tail[1] = last;
      else {
        if (this.ownRuns.length >= OWN_RUNS_MAX) mergeRuns(this.ownRuns);
        this.ownRuns.push([first, last]);
      }
    }
    this.stagedOwn = [];
  }

  abort(): void {
    this.staged = [];
    this.stagedOwn = [];
  }

  /**
   * Rebuilds the state from `log`'s batch headers, from its start, and remembers the log to read
   * its start offset from (`locate` and the pruning after retention). Returns the batches scanned.
   * `scan: false` only attaches the log and starts empty: for a local topic, whose leaders refuse
   * origin-tagged batches, so its log holds none and reading all of it at open would be waste.
   */
  async rebuild(log: PartitionLog, options: { scan?: boolean } = {}): Promise<number> {
    this.committed.clear();
    this.staged = [];
    this.ownRuns = [];
    this.stagedOwn = [];
    // What retention took before this open is not in the log any more: all of it may have been own.
    this.ownDeleted = log.logStartOffset - 1;
    this.logStart = () => log.logStartOffset;
    if (options.scan === false) return 0;
    const scanned = await scanBatchHeaders(log, log.logStartOffset, (h) => {
      // The write time is not stored; the batch's newest timestamp stands in for it (as in
      // producer-state.ts), used only by duplicate answers.
      this.record(h, { baseOffset: h.baseOffset }, h.maxTimestamp);
      this.commit();
    });
    // A log that no longer starts at 0 may have lost records of any origin to retention: below
    // each origin's first held batch nothing can be vouched for (a conservative bound).
    if (log.logStartOffset > 0) for (const t of this.committed.values()) t.deletedUpTo = Math.max(t.deletedUpTo, (t.index[0]?.originBase ?? t.cursor + 1) - 1);
    return scanned;
  }

  private effectiveCursor(origin: string): number {
    for (let i = this.staged.length - 1; i >= 0; i--) {
      const s = this.staged[i]!;
      if (s.origin === origin) return Math.max(s.entry.originLast, this.committed.get(origin)?.cursor ?? -1);
    }
    return this.committed.get(origin)?.cursor ?? -1;
  }

  /**
   * The answer to a batch already held: its local offsets when one index entry (staged or
   * committed) holds all of it, since origin offsets run contiguously inside one batch; otherwise
   * (the entry was thinned away) the batch that holds the cursor, a conservative upper bound that
   * makes an acks=all wait cover the records.
   */
  private duplicateOf(origin: string, base: number, last: number): AppendResult {
    for (let i = this.staged.length - 1; i >= 0; i--) {
      const s = this.staged[i]!;
      if (s.origin === origin && s.entry.originBase <= base && s.entry.originLast >= last) {
        return within(s.entry, base, last, s.appendMs);
      }
    }
    const t = this.committed.get(origin);
    const latest = [...this.staged].reverse().find((s) => s.origin === origin);
    if (t) {
      const i = lastBaseAtOrBelow(t.index, base);
      // Scan forward from the landing entry (at most one step: entries do not overlap).
      for (let j = Math.max(0, i); j < t.index.length && t.index[j]!.originBase <= base; j++) {
        const e = t.index[j]!;
        if (e.originBase <= base && e.originLast >= last) return within(e, base, last, t.cursorAppendMs);
      }
    }
    if (latest) return { baseOffset: latest.entry.localBase, lastOffset: latest.localLast, appendTimeMs: latest.appendMs };
    return { baseOffset: t!.cursorLocalBase, lastOffset: t!.cursorLocalLast, appendTimeMs: t!.cursorAppendMs };
  }

  private apply(s: StagedBatch): void {
    let t = this.committed.get(s.origin);
    if (!t) {
      t = { cursor: -1, cursorLocalBase: -1, cursorLocalLast: -1, cursorAppendMs: 0, index: [], deletedUpTo: -1 };
      this.committed.set(s.origin, t);
    }
    // A follower copies whatever its leader holds; only batches past the cursor move it or enter
    // the index, so the index stays sorted by origin offset for the binary search.
    if (s.entry.originLast <= t.cursor) return;
    t.cursor = s.entry.originLast;
    t.cursorLocalBase = s.entry.localBase;
    t.cursorLocalLast = s.localLast;
    t.cursorAppendMs = s.appendMs;
    if (t.index.length >= this.indexEntriesMax) thin(t.index);
    t.index.push(s.entry);
    this.pruneBelow(t, this.logStart());
  }

  /** Drops index entries whose batches retention deleted (the cursor stays: those records were held). */
  private pruneBelow(t: OriginTrack, logStartOffset: number): void {
    let n = 0;
    while (n < t.index.length && t.index[n]!.localBase < logStartOffset) n++;
    if (n === 0) return;
    t.index.splice(0, n);
    // The entries are sparse: what was deleted reaches at most up to the first one left.
    t.deletedUpTo = Math.max(t.deletedUpTo, (t.index[0]?.originBase ?? t.cursor + 1) - 1);
  }
}

/** Halves the runs by merging neighbours pairwise (the newest run kept as it is). */
function mergeRuns(runs: [number, number][]): void {
  const out: [number, number][] = [];
  const last = runs.length - 1;
  let i = 0;
  for (; i + 1 < last; i += 2) out.push([runs[i]![0], runs[i + 1]![1]]);
  for (; i <= last; i++) out.push(runs[i]!);
  runs.length = 0;
  runs.push(...out);
}

/** Keeps every other entry, the newest included (it answers the latest lookups exactly). */
function thin(index: IndexEntry[]): void {
  const keepOdd = (index.length - 1) % 2 === 1;
  let w = 0;
  for (let r = 0; r < index.length; r++) if ((r % 2 === 1) === keepOdd) index[w++] = index[r]!;
  index.length = w;
}

/** Index of the last entry with originLast <= offset, or -1. */
function lastAtOrBelow(index: readonly IndexEntry[], offset: number): number {
  let lo = 0;
  let hi = index.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    if (index[mid]!.originLast <= offset) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}

/** Index of the last entry with originBase <= offset, or -1. */
function lastBaseAtOrBelow(index: readonly IndexEntry[], offset: number): number {
  let lo = 0;
  let hi = index.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    if (index[mid]!.originBase <= offset) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}

function within(e: IndexEntry, base: number, last: number, appendTimeMs: number): AppendResult {
  return { baseOffset: e.localBase + (base - e.originBase), lastOffset: e.localBase + (last - e.originBase), appendTimeMs };
}

/**
 * One guard made of the origin state and the producer state, for a log that takes one guard.
 * Every batch goes through both checks: the origin state acts only on origin-tagged batches and
 * the producer state only on batches without an origin. The origin state inspects first and
 * stages after the producer state accepted, so a batch refused or answered as a retry leaves no
 * trace in either.
 */
export function composeGuards(origins: OriginState, producers: AppendGuard): AppendGuard {
  return {
    check(h, placement) {
      const dup = origins.inspect(h, placement);
      if (dup) return dup;
      const earlier = producers.check(h, placement);
      if (earlier) return earlier;
      origins.record(h, placement);
      return null;
    },
    commit() {
      producers.commit();
      origins.commit();
    },
    abort() {
      producers.abort();
      origins.abort();
    },
  };
}
