/**
 * Where a gateway's admission limiter reads its load signals (ratelimit's LoadSignalSource):
 *  - event-loop delay p99 of this process (perf_hooks.monitorEventLoopDelay, its own histogram,
 *    reset at each read so it covers one interval; the /metrics summary keeps a separate one);
 *  - process RSS;
 *  - from the cell, polled in the background at most once per interval and each poll bounded by
 *    CELL_POLL_TIMEOUT_MS (never on the request path, never two at once): under-replicated
 *    partitions, ISR shrinks since the previous poll (members that left a partition's ISR), and
 *    the brokers' fsync p99 (the highest of the brokers' own reports in CellStatus);
 *  - the replication backlog of this region's writes to other regions, from the mesh's cursors
 *    (0 on a gateway without a mesh: nothing leaves the region).
 * The produce p99 is not read here: the limiter measures it from its own tickets.
 *
 * A signal that cannot be read (the cell did not answer lately, a read threw) is NaN, which the
 * controller ignores, and counts as a failure in `failures()` (shown in GET /v1/limiter).
 */
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import type { CellStatus } from '../client/index.ts';
import { silentLogger, systemClock, type Clock, type Logger, type TimerHandle } from '../core/index.ts';
import type { LoadSignals, LoadSignalSource, SignalName } from '../../ratelimit/index.ts';
import type { GatewayMesh } from './mesh.ts';

/** Longest one cell poll may take before its figures count as unreadable (CellStatus asks every broker). */
export const CELL_POLL_TIMEOUT_MS = 2_000;
/** Cell figures older than this many poll intervals are not used (the cell stopped answering). */
export const CELL_STALE_INTERVALS = 3;
/** monitorEventLoopDelay's resolution; its samples include it, so it is taken off. */
const EVENT_LOOP_RESOLUTION_MS = 10;
const NS_PER_MS = 1e6;
const BYTES_PER_MB = 1024 * 1024;

/** What the source polls: the admin's `cellStatus` (what `/v1/cell` answers). */
export interface CellStatusSource {
  cellStatus(): Promise<CellStatus>;
}

export interface GatewayLoadSignalsOptions {
  cell: CellStatusSource;
  mesh?: GatewayMesh | null;
  /** Poll interval (the limiter's interval). */
  intervalMs: number;
  clock?: Clock;
  logger?: Logger;
}

interface CellFigures {
  atMs: number;
  underReplicatedPartitions: number;
  fsyncP99Ms: number;
}

export class GatewayLoadSignals implements LoadSignalSource {
  private readonly loop: IntervalHistogram;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly failed: Partial<Record<SignalName, number>> = {};
  private cellFigures: CellFigures | null = null;
  /** ISR members seen at the last poll, per partition. */
  private isrs = new Map<string, Set<number>>();
  /** ISR shrinks polled since the last read. */
  private shrinks = 0;
  private polling = false;
  private timer: TimerHandle | null = null;
  private closed = false;

  constructor(private readonly o: GatewayLoadSignalsOptions) {
    this.clock = o.clock ?? systemClock;
    this.logger = (o.logger ?? silentLogger).child({ component: 'load-signals' });
    this.loop = monitorEventLoopDelay({ resolution: EVENT_LOOP_RESOLUTION_MS });
    this.loop.enable();
  }

  /** Starts polling the cell (the first poll now). */
  start(): void {
    if (this.timer || this.closed) return;
    const next = () => {
      if (this.closed) return;
      this.poll();
      this.timer = this.clock.setTimeout(next, this.o.intervalMs);
    };
    next();
  }

  close(): void {
    this.closed = true;
    this.timer?.cancel();
    this.timer = null;
    this.loop.disable();
  }

  read(): Partial<LoadSignals> {
    const has = this.loop.count > 0;
    const eventLoopDelayP99Ms = has ? Math.max(0, this.loop.percentile(99) / NS_PER_MS - EVENT_LOOP_RESOLUTION_MS) : 0;
    this.loop.reset();
    const out: Partial<LoadSignals> = { eventLoopDelayP99Ms, rssMb: this.guard('rssMb', () => process.memoryUsage.rss() / BYTES_PER_MB) };
    const fresh = this.cellFigures !== null && this.clock.monotonicMs() - this.cellFigures.atMs <= CELL_STALE_INTERVALS * this.o.intervalMs;
    if (fresh) {
      out.underReplicatedPartitions = this.cellFigures!.underReplicatedPartitions;
      out.fsyncP99Ms = this.cellFigures!.fsyncP99Ms;
      out.isrShrinks = this.shrinks;
    } else {
      for (const n of ['underReplicatedPartitions', 'fsyncP99Ms', 'isrShrinks'] as const) {
        out[n] = NaN;
        this.fail(n);
      }
    }
    this.shrinks = 0;
    // The mesh's cursors are in memory: cheap enough to read here. Without a mesh nothing leaves the region.
    out.replicationBacklogRecords = this.guard('replicationBacklogRecords', () => this.o.mesh?.replicationBacklogRecords?.() ?? 0);
    return out;
  }

  failures(): Partial<Record<SignalName, number>> {
    return { ...this.failed };
  }

  private guard(name: SignalName, fn: () => number): number {
    try {
      const v = fn();
      if (Number.isFinite(v)) return v;
    } catch (err) {
      this.logger.debug({ err, signal: name }, 'load signal read failed');
    }
    this.fail(name);
    return NaN;
  }

  private fail(name: SignalName): void {
    this.failed[name] = (this.failed[name] ?? 0) + 1;
  }

  /** One background poll of the cell, unless the previous one has not settled yet. */
  private poll(): void {
    if (this.polling) return;
    this.polling = true;
    const startedMs = this.clock.monotonicMs();
    let timedOut = false;
    const deadline = this.clock.setTimeout(() => void (timedOut = true), CELL_POLL_TIMEOUT_MS);
    this.o.cell
      .cellStatus()
      .then(
        (st) => {
          // A late answer is not used: its figures are older than they look (read() treats the cell as unreadable meanwhile).
          if (timedOut || this.clock.monotonicMs() - startedMs > CELL_POLL_TIMEOUT_MS) return;
          this.take(st);
        },
        (err: unknown) => this.logger.debug({ err }, 'cell status poll failed'),
      )
      .finally(() => {
        deadline.cancel();
        this.polling = false;
      });
  }

  private take(st: CellStatus): void {
    const isrs = new Map<string, Set<number>>();
    let under = 0;
    for (const p of st.partitions) {
      const key = `${p.topic}\u0000${p.partition}`;
      const now = new Set(p.isr);
      isrs.set(key, now);
      if (p.isr.length < p.replicas.length) under++;
      const before = this.isrs.get(key);
      if (before) for (const id of before) if (!now.has(id)) this.shrinks++;
    }
    this.isrs = isrs;
    let fsync = 0;
    for (const b of st.brokers) if (typeof b.fsyncP99Ms === 'number' && b.fsyncP99Ms > fsync) fsync = b.fsyncP99Ms;
    this.cellFigures = { atMs: this.clock.monotonicMs(), underReplicatedPartitions: under, fsyncP99Ms: fsync };
  }
}
