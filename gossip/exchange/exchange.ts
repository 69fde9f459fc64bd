/**
 * The exchange of one region: a replicator per (origin region, global topic, partition), the
 * links they fetch over (bandwidth, bytes in flight, health), the cursor board in the mesh, the
 * stall watchdog, retention gaps, and acks=geo. It runs in one gateway per region: the alive
 * member of the region with the lowest id (two would only do the work twice; the origin guard at
 * the leader keeps even that exactly once).
 */
import type { Clock, TimerHandle } from '../../src/core/index.ts';
import { EdgeqError, silentLogger, systemClock, type Logger } from '../../src/core/index.ts';
import type { MeshMember } from '../agent/events.ts';
import type { MeshStateAccess } from '../region/index.ts';
import { MeshKeys, type RegionInfo } from '../region/index.ts';
import type { CellAccess } from './cell-access.ts';
import { CursorBoard } from './cursor-board.ts';
import { exchangeLimits, type ExchangeLimits } from './limits.ts';
import { LinkBudget } from './link-budget.ts';
import { Replicator, type GapEvent, type ReplicatorStatus } from './replicator.ts';

/** The mesh as the exchange sees it: state, and who is alive. */
export interface ExchangeMesh extends MeshStateAccess {
  members(): MeshMember[];
}

/** A global topic as the catalogue has it. */
export interface ExchangeTopic {
  name: string;
  partitions: number;
}

export interface ExchangeOptions {
  mesh: ExchangeMesh;
  cells: CellAccess;
  /** The global topics now (the catalogue's list). */
  topics: () => ExchangeTopic[];
  limits?: Partial<ExchangeLimits>;
  clock?: Clock;
  logger?: Logger;
  random?: () => number;
}

/** Per source link: what went over it. */
export interface LinkStatus {
  source: string;
  healthy: boolean;
  bytesTotal: number;
  bytesPerSec: number;
  recordsTotal: number;
}

interface LinkState {
  budget: LinkBudget;
  healthy: boolean;
  probing: boolean;
  records: number;
  lastBytes: number;
  lastAtMs: number;
  bytesPerSec: number;
}

const ALIVE = new Set(['alive', 'suspect']);

export class Exchange {
  readonly limits: ExchangeLimits;
  readonly board: CursorBoard;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly replicators = new Map<string, Replicator>();
  private readonly links = new Map<string, LinkState>();
  private readonly gapList: GapEvent[] = [];
  private readonly listeners = { gap: new Set<(g: GapEvent) => void>(), stall: new Set<(s: ReplicatorStatus) => void>() };
  private timer: TimerHandle | null = null;
  private running = false;
  private knownTopics = new Set<string>();
  private closed = false;
  /** Counters for metrics. */
  readonly totals = { gapRecords: new Map<string, number>(), stalls: 0, appliedRecords: new Map<string, number>() };

  constructor(private readonly o: ExchangeOptions) {
    this.limits = exchangeLimits(o.limits);
    this.clock = o.clock ?? systemClock;
    this.logger = (o.logger ?? silentLogger).child({ component: 'exchange' });
    this.board = new CursorBoard(o.mesh, this.clock, this.limits.publishDelayMs);
  }

  get region(): string {
    return this.o.mesh.self().region;
  }

  start(): void {
    this.tick();
  }

  async stop(): Promise<void> {
    this.closed = true;
    this.timer?.cancel();
    await this.deactivate();
    this.board.close();
  }

  /** True when this gateway runs its region's exchange. */
  get active(): boolean {
    return this.running;
  }

  onGap(fn: (g: GapEvent) => void): () => void {
    this.listeners.gap.add(fn);
    return () => this.listeners.gap.delete(fn);
  }

  onStall(fn: (s: ReplicatorStatus) => void): () => void {
    this.listeners.stall.add(fn);
    return () => this.listeners.stall.delete(fn);
  }

  /** Every replicator's state, for `/v1/mesh` and metrics. */
  replication(): ReplicatorStatus[] {
    return [...this.replicators.values()].map((r) => r.status()).sort((a, b) => a.topic.localeCompare(b.topic) || a.partition - b.partition || a.origin.localeCompare(b.origin));
  }

  gaps(): GapEvent[] {
    return [...this.gapList];
  }

  linkStatus(): LinkStatus[] {
    return [...this.links.entries()].map(([source, l]) => ({ source, healthy: l.healthy, bytesTotal: l.budget.bytesTotal, bytesPerSec: l.bytesPerSec, recordsTotal: l.records }));
  }

  /** The other regions the mesh knows (their region entries). */
  otherRegions(): string[] {
    const self = this.region;
    return this.o.mesh
      .state()
      .filter((e) => MeshKeys.isRegion(e.key) && !e.deleted)
      .map((e) => (e.value as RegionInfo).region)
      .filter((r) => r !== self)
      .sort();
  }

  /**
   * Resolves once `regions` other regions have applied this region's records of the partition up
   * to `lastOffset` (as their published cursors say); fails with GEO_TIMEOUT after `timeoutMs`.
   */
  waitApplied(topic: string, partition: number, lastOffset: number, regions: number, timeoutMs: number): Promise<string[]> {
    const self = this.region;
    const done = (): string[] => {
      const have: string[] = [];
      for (const [r, c] of this.board.all(topic, partition)) if (r !== self && (c.applied[self] ?? -1) >= lastOffset) have.push(r);
      return have.sort();
    };
    const now = done();
    if (now.length >= regions) return Promise.resolve(now);
    return new Promise((resolve, reject) => {
      const timer = this.clock.setTimeout(() => {
        off();
        reject(
          new EdgeqError('GEO_TIMEOUT', `the records are durable in ${self} and will still be exchanged, but ${regions} other region(s) had not applied them within ${timeoutMs} ms (applied in: ${done().join(', ') || 'none'})`, {
            details: { topic, partition, lastOffset, regions, appliedIn: done() },
          }),
        );
      }, timeoutMs);
      const off = this.board.onChange((_r, t, p) => {
        if (t !== topic || p !== partition) return;
        const have = done();
        if (have.length < regions) return;
        off();
        timer.cancel();
        resolve(have);
      });
    });
  }

  // -----------------------------------------------------------------------------------------------

  private tick(): void {
    if (this.closed) return;
    this.reconcile()
      .catch((err) => this.logger.warn({ err: (err as Error).message }, 'exchange reconcile failed'))
      .finally(() => {
        if (!this.closed) this.timer = this.clock.setTimeout(() => this.tick(), this.limits.watchIntervalMs);
      });
  }

  /** Am I the alive member of my region with the lowest id? */
  private elected(): boolean {
    const self = this.o.mesh.self();
    const mine = this.o.mesh.members().filter((m) => m.region === self.region && (m.member === self.member || ALIVE.has(m.state)));
    return mine.every((m) => m.member >= self.member);
  }

  private async reconcile(): Promise<void> {
    if (!this.elected()) {
      if (this.running) this.logger.info({}, 'another gateway of this region runs the exchange now');
      await this.deactivate();
      return;
    }
    this.running = true;
    const regions = this.otherRegions();
    const topics = this.o.topics();
    const want = new Set<string>();
    for (const t of topics) {
      for (let p = 0; p < t.partitions; p++) {
        for (const origin of regions) {
          const key = `${origin}/${t.name}/${p}`;
          want.add(key);
          if (!this.replicators.has(key)) this.add(origin, t.name, p);
        }
      }
    }
    for (const [key, r] of this.replicators) {
      if (want.has(key)) continue;
      this.replicators.delete(key);
      for (const l of this.links.values()) l.budget.unregister(key);
      await r.stop();
      if (![...this.replicators.values()].some((x) => x.topic === r.topic && x.partition === r.partition)) this.o.cells.release?.(r.topic, r.partition);
    }
    const names = new Set(topics.map((t) => t.name));
    for (const t of this.knownTopics) if (!names.has(t)) this.board.forget(t);
    this.knownTopics = names;
    await Promise.all(topics.flatMap((t) => Array.from({ length: t.partitions }, (_, p) => this.refreshHead(t.name, p))));
    for (const r of this.replicators.values()) {
      this.board.setApplied(r.topic, r.partition, r.origin, r.appliedOriginOffset());
      const published = this.board.get(r.origin, r.topic, r.partition);
      if (published) r.noteHead(published.head);
      if (r.checkStall()) {
        this.totals.stalls++;
        const s = r.status();
        for (const fn of this.listeners.stall) fn(s);
        this.logger.error({ origin: s.origin, topic: s.topic, partition: s.partition, appliedOriginOffset: s.appliedOriginOffset, lagRecords: s.lagRecords, lastError: s.lastError }, 'replicator stalled');
        void r.restart('stalled');
      }
    }
    this.sampleLinks();
  }

  private async refreshHead(topic: string, partition: number): Promise<void> {
    const signal = AbortSignal.timeout(this.limits.fetchTimeoutMs);
    try {
      const st = await this.o.cells.localState(topic, partition, signal);
      this.board.setHead(topic, partition, st.cursors[this.region] ?? -1);
      this.board.setDeleted(topic, partition, st.deletedUpTo);
    } catch {
      // The topic may not exist here yet (the catalogue creates it); the next tick tries again.
    }
  }

  private add(origin: string, topic: string, partition: number): void {
    const r = new Replicator(origin, topic, partition, {
      cells: this.o.cells,
      clock: this.clock,
      logger: this.logger,
      limits: this.limits,
      pickSource: (o, t, p, cursor, exclude) => this.pickSource(o, t, p, cursor, exclude),
      sourceFailed: (s, err) => this.sourceFailed(s, err),
      link: (s) => this.link(s).budget,
      onGap: (g) => this.recordGap(g),
      onApplied: (rep, records) => {
        this.board.setApplied(rep.topic, rep.partition, rep.origin, rep.appliedOriginOffset());
        const key = `${rep.origin}/${rep.topic}/${rep.partition}`;
        this.totals.appliedRecords.set(key, (this.totals.appliedRecords.get(key) ?? 0) + records);
        const l = rep.status().source;
        if (l) this.link(l).records += records;
      },
      ...(this.o.random ? { random: this.o.random } : {}),
    });
    this.replicators.set(r.key, r);
    r.start();
  }

  private link(source: string): LinkState {
    let l = this.links.get(source);
    if (!l) {
      const budget = new LinkBudget(this.clock, this.limits.linkBandwidthBytesPerSec, this.limits.inflightBytesPerLinkMax);
      l = { budget, healthy: true, probing: false, records: 0, lastBytes: 0, lastAtMs: this.clock.monotonicMs(), bytesPerSec: 0 };
      this.links.set(source, l);
    }
    return l;
  }

  /**
   * The origin while its link is healthy; else the region that holds most of the origin's records
   * beyond `cursor` over a healthy link (relay); else null (the replicator backs off and asks again).
   */
  private pickSource(origin: string, topic: string, partition: number, cursor: number, exclude: ReadonlySet<string> = new Set()): string | null {
    if (this.link(origin).healthy) return origin;
    let best: { region: string; offset: number } | null = null;
    for (const [region, c] of this.board.all(topic, partition)) {
      if (region === this.region || region === origin || exclude.has(region) || !this.link(region).healthy) continue;
      const offset = c.applied[origin] ?? -1;
      // A relay must still hold everything past `cursor`: not if its retention took some of it.
      if ((c.deleted?.[origin] ?? -1) > cursor) continue;
      if (offset > cursor && (!best || offset > best.offset)) best = { region, offset };
    }
    return best?.region ?? null;
  }

  /** A link failed: unused until a probe gets an answer through it. */
  private sourceFailed(source: string, err: unknown): void {
    const l = this.link(source);
    if (l.healthy) this.logger.warn({ source, err: (err as Error).message }, 'link to region failed: fetching through others until it answers');
    l.healthy = false;
    if (l.probing) return;
    l.probing = true;
    void this.probe(source, l, 0);
  }

  private async probe(source: string, l: LinkState, attempt: number): Promise<void> {
    const delay = Math.min(this.limits.probeIntervalMsMax, this.limits.backoffMsMin * 2 ** Math.min(attempt, 20));
    await new Promise<void>((resolve) => this.clock.setTimeout(resolve, delay));
    if (this.closed) return;
    const ok = await this.o.cells.probe(source, AbortSignal.timeout(this.limits.fetchTimeoutMs)).then(
      () => true,
      () => false,
    );
    if (ok) {
      l.healthy = true;
      l.probing = false;
      this.logger.info({ source }, 'link to region answers again');
      // Replicators backing off (no source while it was down) go at once, not at their next try.
      for (const r of this.replicators.values()) r.wake();
      return;
    }
    void this.probe(source, l, attempt + 1);
  }

  private recordGap(g: GapEvent): void {
    this.gapList.push(g);
    while (this.gapList.length > this.limits.gapsMax) this.gapList.shift();
    const key = `${g.origin}/${g.topic}/${g.partition}`;
    this.totals.gapRecords.set(key, (this.totals.gapRecords.get(key) ?? 0) + g.records);
    for (const fn of this.listeners.gap) fn(g);
  }

  private sampleLinks(): void {
    const now = this.clock.monotonicMs();
    for (const l of this.links.values()) {
      const dt = now - l.lastAtMs;
      if (dt <= 0) continue;
      l.bytesPerSec = Math.round(((l.budget.bytesTotal - l.lastBytes) * 1000) / dt);
      l.lastBytes = l.budget.bytesTotal;
      l.lastAtMs = now;
    }
  }

  private async deactivate(): Promise<void> {
    this.running = false;
    const all = [...this.replicators.values()];
    this.replicators.clear();
    await Promise.all(all.map((r) => r.stop()));
    for (const l of this.links.values()) l.budget.close();
    this.links.clear();
  }
}
