/**
 * Test support for the exchange (not shipped API): cells of several regions kept in memory with
 * the broker's origin semantics (own writes stamped on the way out, the origin guard on apply, the
 * bounded scan with its continuation, the log start), links that can be cut per pair, and a mesh
 * whose state every member sees at once.
 */
import { EdgeqError } from '../../src/core/index.ts';
import { buildBatch, decodeBatch, readBatchHeader, splitBatches, writeInt64, OFFSET_BASE_OFFSET } from '../../src/log/index.ts';
import type { MeshMember } from '../agent/events.ts';
import type { MeshStateEntry } from '../region/index.ts';
import type { ApplyResult, CellAccess, LocalOriginState, OriginFetchRequest, OriginFetchResult } from './cell-access.ts';
import type { ExchangeMesh } from './exchange.ts';

interface Stored {
  base: number;
  last: number;
  bytes: Buffer;
  origin: string | null;
  originBase: number;
  originLast: number;
}

class FakePartitionLog {
  batches: Stored[] = [];
  logStart = 0;
  deleted: Record<string, number> = {};
  ownDeleted = -1;
  end = 0;
  waiters: (() => void)[] = [];

  append(bytes: Buffer): Stored {
    const h = readBatchHeader(bytes);
    const copy = Buffer.from(bytes);
    writeInt64(copy, OFFSET_BASE_OFFSET, this.end);
    const s: Stored = { base: this.end, last: this.end + h.lastOffsetDelta, bytes: copy, origin: h.originRegion, originBase: h.originOffset, originLast: h.originOffset + h.lastOffsetDelta };
    this.batches.push(s);
    this.end = s.last + 1;
    for (const w of this.waiters.splice(0)) w();
    return s;
  }

  cursor(origin: string): number {
    let c = -1;
    for (const b of this.batches) if (b.origin === origin) c = Math.max(c, b.originLast);
    return c;
  }

  /** Retention: drops batches wholly below `offset`. */
  deleteBefore(offset: number): void {
    for (const b of this.batches) {
      if (b.last >= offset) continue;
      if (b.origin) this.deleted[b.origin] = Math.max(this.deleted[b.origin] ?? -1, b.originLast);
      else this.ownDeleted = Math.max(this.ownDeleted, b.last);
    }
    this.batches = this.batches.filter((b) => b.last >= offset);
    this.logStart = this.batches[0]?.base ?? this.end;
  }
}

/** The last own record's offset (what the broker reports as a region's own head). */
function ownHead(log: FakePartitionLog): number {
  for (let i = log.batches.length - 1; i >= 0; i--) if (log.batches[i]!.origin === null) return log.batches[i]!.last;
  return -1;
}

/** The cells of every region, and the links between them. */
export class FakeWorld {
  readonly logs = new Map<string, FakePartitionLog>();
  private readonly cut = new Set<string>();
  /** Fetches from these sources never answer (until aborted): a stuck link. */
  readonly hanging = new Set<string>();
  fetches = 0;
  /** Appends that passed the guard, and the one (1-based) to refuse as a planted fault. */
  applies = 0;
  failApplyAt = 0;
  /** Fetches that went into `hanging`. */
  hung = 0;

  log(region: string, topic: string, partition: number): FakePartitionLog {
    const key = `${region}/${topic}/${partition}`;
    let l = this.logs.get(key);
    if (!l) {
      l = new FakePartitionLog();
      this.logs.set(key, l);
    }
    return l;
  }

  /** Cuts (or heals) the link between two regions, both ways. */
  partition(a: string, b: string, on = true): void {
    for (const k of [`${a}|${b}`, `${b}|${a}`]) {
      if (on) this.cut.add(k);
      else this.cut.delete(k);
    }
  }

  reachable(from: string, to: string): boolean {
    return !this.cut.has(`${from}|${to}`);
  }

  /** A producer in `region` writes `values` as one batch. */
  async produce(region: string, topic: string, partition: number, values: string[]): Promise<void> {
    this.log(region, topic, partition).append(await buildBatch(values.map((value) => ({ value }))));
  }

  /** Every record of the partition in `region`, as `origin:originOffset=value`, in log order. */
  async records(region: string, topic: string, partition: number): Promise<{ origin: string; originOffset: number; value: string }[]> {
    const out: { origin: string; originOffset: number; value: string }[] = [];
    for (const b of this.log(region, topic, partition).batches) {
      const { records } = await decodeBatch(b.bytes);
      records.forEach((r, i) => out.push({ origin: b.origin ?? region, originOffset: b.origin ? b.originBase + i : r.offset, value: r.value!.toString() }));
    }
    return out;
  }

  cells(self: string): CellAccess {
    return new FakeCells(this, self);
  }
}

class FakeCells implements CellAccess {
  constructor(
    private readonly world: FakeWorld,
    private readonly self: string,
  ) {}

  private check(region: string): void {
    if (!this.world.reachable(this.self, region)) throw new EdgeqError('CONNECTION_CLOSED', `${region} is cut off from ${this.self}`);
  }

  async probe(region: string): Promise<void> {
    this.check(region);
  }

  /** Fetch sessions, as the broker keeps them: each fetch's end, for the next to continue from. */
  private readonly sessions = new Map<string, Promise<{ next: number; after: number } | undefined>>();

  async fetch(region: string, req: OriginFetchRequest, signal: AbortSignal): Promise<OriginFetchResult> {
    if (!req.session) return this.fetchOnce(region, req, signal);
    const prev = this.sessions.get(req.session) ?? Promise.resolve(undefined);
    let finish!: (v: { next: number; after: number } | undefined) => void;
    this.sessions.set(req.session, new Promise((r) => (finish = r)));
    try {
      let r = req;
      if (req.scanFrom === -2) {
        const p = await prev;
        if (!p) throw new EdgeqError('INVALID_REQUEST', `fetch session ${req.session} is unknown or broken`);
        r = { ...req, scanFrom: p.next, afterOriginOffset: Math.max(req.afterOriginOffset, p.after) };
      }
      const res = await this.fetchOnce(region, r, signal);
      let after = r.afterOriginOffset;
      for (const b of splitBatches(res.records)) {
        const h = readBatchHeader(b);
        if (h.originRegion === req.origin) after = Math.max(after, h.originOffset + h.lastOffsetDelta);
      }
      finish({ next: res.scannedTo, after });
      return res;
    } catch (err) {
      finish(undefined);
      throw err;
    }
  }

  private async fetchOnce(region: string, req: OriginFetchRequest, signal: AbortSignal): Promise<OriginFetchResult> {
    this.check(region);
    this.world.fetches++;
    if (this.world.hanging.has(region)) {
      this.world.hung++;
      await new Promise<void>((_, reject) => signal.addEventListener('abort', () => reject(new EdgeqError('CONNECTION_CLOSED', 'aborted')), { once: true }));
    }
    const log = this.world.log(region, req.topic, req.partition);
    let res = await this.scan(region, log, req);
    if (res.records.length === 0 && req.maxWaitMs > 0) {
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(t);
          signal.removeEventListener('abort', done);
          resolve();
        };
        const t = setTimeout(done, req.maxWaitMs);
        log.waiters.push(done);
        signal.addEventListener('abort', done, { once: true });
      });
      this.check(region);
      res = await this.scan(region, log, { ...req, scanFrom: res.scannedTo });
    }
    return res;
  }

  private async scan(region: string, log: FakePartitionLog, req: OriginFetchRequest): Promise<OriginFetchResult> {
    let from = req.scanFrom;
    if (from === -1) {
      if (req.origin === region) from = req.afterOriginOffset + 1;
      else from = log.batches.find((b) => b.origin === req.origin && b.originLast > req.afterOriginOffset)?.base ?? log.end;
      from = Math.max(from, log.logStart);
    }
    if (from < log.logStart) throw new EdgeqError('OFFSET_OUT_OF_RANGE', `offset ${from} is below the log start ${log.logStart}`, { details: { logStartOffset: log.logStart, originDeletedUpTo: { ...log.deleted, ...(log.ownDeleted >= 0 ? { [region]: log.ownDeleted } : {}) } } });
    const out: Buffer[] = [];
    let scanned = 0;
    let scannedTo = from;
    for (const b of log.batches) {
      if (b.last < from) continue;
      if (scanned > 0 && scanned + b.bytes.length > req.maxBytes) break;
      scanned += b.bytes.length;
      scannedTo = b.last + 1;
      if (req.origin === region && b.origin === null) {
        if (b.last <= req.afterOriginOffset) continue;
        const { records } = await decodeBatch(b.bytes);
        out.push(await buildBatch(records.map((r) => ({ value: r.value, timestamp: r.timestamp })), { origin: { region, offset: b.base }, baseOffset: b.base }));
      } else if (b.origin === req.origin && b.originLast > req.afterOriginOffset) {
        out.push(b.bytes);
      }
    }
    const originCursors: Record<string, number> = { [region]: ownHead(log) };
    for (const b of log.batches) if (b.origin) originCursors[b.origin] = Math.max(originCursors[b.origin] ?? -1, b.originLast);
    return { records: Buffer.concat(out), scannedTo, logStartOffset: log.logStart, originCursors, originDeletedUpTo: { ...log.deleted } };
  }

  async apply(topic: string, partition: number, records: Buffer, _signal: AbortSignal, expectedCursor: number): Promise<ApplyResult> {
    // A run of batches: each conditional on the one before, as the broker appends them.
    let expected = expectedCursor;
    let first: ApplyResult | null = null;
    let allDuplicate = true;
    for (const batch of splitBatches(records)) {
      const r = await this.applyOne(topic, partition, batch, expected);
      const h = readBatchHeader(batch);
      expected = Math.max(expected, h.originOffset + h.lastOffsetDelta);
      first ??= r;
      allDuplicate &&= r.duplicate;
    }
    return { duplicate: allDuplicate, baseOffset: first?.baseOffset ?? -1 };
  }

  private async applyOne(topic: string, partition: number, batch: Buffer, expectedCursor: number): Promise<ApplyResult> {
    const h = readBatchHeader(batch);
    if (h.originRegion === this.self) throw new EdgeqError('ORIGIN_IS_SELF', 'loop');
    if (h.originRegion === null) throw new EdgeqError('INVALID_REQUEST', 'no origin');
    const log = this.world.log(this.self, topic, partition);
    const cursor = log.cursor(h.originRegion);
    const last = h.originOffset + h.lastOffsetDelta;
    if (last <= cursor) return { duplicate: true, baseOffset: -1 };
    if (h.originOffset <= cursor) throw new EdgeqError('ORIGIN_OVERLAP', 'overlap');
    if (expectedCursor !== cursor) throw new EdgeqError('ORIGIN_CURSOR_MISMATCH', `expected ${expectedCursor}, cursor ${cursor}`);
    this.world.applies++;
    if (this.world.failApplyAt === this.world.applies) throw new EdgeqError('NOT_ENOUGH_REPLICAS', 'planted: this append is refused');
    return { duplicate: false, baseOffset: log.append(batch).base };
  }

  async localCursor(topic: string, partition: number, origin: string): Promise<number> {
    const log = this.world.log(this.self, topic, partition);
    return origin === this.self ? ownHead(log) : log.cursor(origin);
  }

  async localState(topic: string, partition: number): Promise<LocalOriginState> {
    const log = this.world.log(this.self, topic, partition);
    const cursors: Record<string, number> = { [this.self]: ownHead(log) };
    for (const b of log.batches) if (b.origin) cursors[b.origin] = Math.max(cursors[b.origin] ?? -1, b.originLast);
    return { cursors, deletedUpTo: { ...log.deleted } };
  }
}

/** A mesh whose state every member sees at once; every member alive. */
export class InstantMesh {
  readonly entries = new Map<string, MeshStateEntry>();
  private readonly listeners = new Set<(e: MeshStateEntry) => void>();
  private version = 0;
  readonly regions: string[] = [];

  member(region: string): ExchangeMesh {
    this.regions.push(region);
    this.entries.set(`region/${region}`, { key: `region/${region}`, value: { region }, version: ++this.version, member: `${region}-gw`, updatedAtMs: Date.now(), deleted: false });
    const write = (key: string, value: unknown, deleted: boolean) => {
      const e: MeshStateEntry = { key, value, version: ++this.version, member: `${region}-gw`, updatedAtMs: Date.now(), deleted };
      this.entries.set(key, e);
      for (const l of this.listeners) l(e);
    };
    return {
      self: () => ({ region, member: `${region}-gw` }),
      setState: (k, v) => write(k, v, false),
      deleteState: (k) => write(k, undefined, true),
      state: () => [...this.entries.values()],
      onStateChange: (l) => {
        this.listeners.add(l);
        return () => this.listeners.delete(l);
      },
      members: (): MeshMember[] => this.regions.map((r) => ({ region: r, member: `${r}-gw`, address: '', state: 'alive', incarnation: 1, phi: 0, lastHeardMs: 0, rttMs: null })),
    };
  }
}

/** Resolves when `fn` returns true, polling every 10 ms; fails after `ms`. */
export async function eventually(what: string, ms: number, fn: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await fn()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`timed out after ${ms} ms waiting for ${what}`);
}

