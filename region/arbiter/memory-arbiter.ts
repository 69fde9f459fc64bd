/**
 * MemoryArbiter: the arbiter's semantics (etcd's) held in one process. It backs in-process tests
 * of the cell controller and is what the `edgeq arbiter` process serves over TCP.
 *
 * One global revision is bumped by every write; a lease expiry or revoke deletes all its keys in
 * one revision, as etcd does. Lease deadlines run on the injected Clock, so tests drive expiry
 * with a FakeClock. Watches replay from a bounded history of recent events and then follow live
 * changes; events reach a watcher on a microtask, never inside the write that caused them, so a
 * handler may write to the arbiter without re-entering it.
 */
import { randomBytes } from 'node:crypto';
import { EdgeqError, silentLogger, systemClock, type Clock, type Logger, type TimerHandle } from '../../src/core/index.ts';
import type { Arbiter, CasOptions, CasResult, KeyValue, Lease, TxnRequest, TxnResult, Watch, WatchEvent } from './arbiter.ts';
import type { ArbiterSnapshot } from './snapshot.ts';
import { checkCas, checkKey, checkPrefix, checkPut, checkRevision, checkTtlMs, checkTxn, compactedError, NO_LEASE } from './validation.ts';

/**
 * Recent events kept for watches that start in the past. A controller that reconnects within a
 * few seconds needs at most a few hundred; 10 000 events of a few hundred bytes is a few MiB.
 */
export const HISTORY_EVENTS_MAX_DEFAULT = 10_000;
/** Keys held at once: a cell has one key per broker, partition and topic; 100 000 is ample. */
export const KEYS_MAX_DEFAULT = 100_000;
/** Live leases: one per broker and controller candidate; 10 000 bounds a runaway granter. */
export const LEASES_MAX_DEFAULT = 10_000;
/** Open watches: a few per connected controller or broker. */
export const WATCHES_MAX_DEFAULT = 1_000;

/** Limits and collaborators of a MemoryArbiter. */
export interface MemoryArbiterOptions {
  clock?: Clock;
  logger?: Logger;
  historyEventsMax?: number;
  keysMax?: number;
  leasesMax?: number;
  watchesMax?: number;
  /**
   * Events queued for one watcher before the watch is broken (onError) rather than grow without
   * bound; defaults to historyEventsMax, since a watcher that far behind could not resume anyway.
   */
  watchPendingEventsMax?: number;
  /** State to start from (see `snapshot()`); keys bound to leases are deleted at start. */
  snapshot?: ArbiterSnapshot;
  /** Called synchronously after every change of state: the hook for persistence. */
  onChange?: () => void;
}

interface StoredKey {
  value: Buffer;
  createRevision: number;
  modRevision: number;
  leaseId: string;
}

interface LeaseState {
  id: string;
  ttlMs: number;
  timer: TimerHandle;
  keys: Set<string>;
}

interface Watcher {
  prefix: string;
  onEvent: (e: WatchEvent) => void;
  onError: ((err: Error) => void) | undefined;
  pending: WatchEvent[];
  scheduled: boolean;
  closed: boolean;
}

/** The arbiter's semantics in memory. */
export class MemoryArbiter implements Arbiter {
  readonly historyEventsMax: number;
  readonly keysMax: number;
  readonly leasesMax: number;
  readonly watchesMax: number;
  readonly watchPendingEventsMax: number;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly onChange: (() => void) | undefined;
  private revision = 0;
  /** Every event with modRevision > compactRevision is in `history`. */
  private compactRevision = 0;
  private readonly keys = new Map<string, StoredKey>();
  private readonly leases = new Map<string, LeaseState>();
  private readonly watchers = new Set<Watcher>();
  /** Ring of recent events, oldest first; `historyStart` indexes the oldest. */
  private history: WatchEvent[] = [];
  private closed = false;

  constructor(options: MemoryArbiterOptions = {}) {
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? silentLogger;
    this.historyEventsMax = options.historyEventsMax ?? HISTORY_EVENTS_MAX_DEFAULT;
    this.keysMax = options.keysMax ?? KEYS_MAX_DEFAULT;
    this.leasesMax = options.leasesMax ?? LEASES_MAX_DEFAULT;
    this.watchesMax = options.watchesMax ?? WATCHES_MAX_DEFAULT;
    this.watchPendingEventsMax = options.watchPendingEventsMax ?? this.historyEventsMax;
    this.onChange = options.onChange;
    for (const [name, v] of Object.entries({ historyEventsMax: this.historyEventsMax, keysMax: this.keysMax, leasesMax: this.leasesMax, watchesMax: this.watchesMax, watchPendingEventsMax: this.watchPendingEventsMax })) {
      if (!Number.isSafeInteger(v) || v < 1) throw new EdgeqError('INVALID_CONFIG', `MemoryArbiter ${name} must be a positive integer`, { details: { [name]: v } });
    }
    if (options.snapshot) this.restore(options.snapshot);
  }

  /** The store's current revision. */
  currentRevision(): number {
    return this.revision;
  }

  /** Events with modRevision above this are still kept for watches. */
  compactedRevision(): number {
    return this.compactRevision;
  }

  async grantLease(ttlMs: number): Promise<Lease> {
    this.checkOpen();
    checkTtlMs(ttlMs);
    if (this.leases.size >= this.leasesMax) throw new EdgeqError('ARBITER_UNAVAILABLE', `too many leases (leasesMax ${this.leasesMax})`, { details: { leasesMax: this.leasesMax } });
    let id = newLeaseId();
    while (this.leases.has(id)) id = newLeaseId();
    const state: LeaseState = { id, ttlMs, timer: this.clock.setTimeout(() => this.expire(id), ttlMs), keys: new Set() };
    this.leases.set(id, state);
    return this.leaseHandle(id, ttlMs);
  }

  /** A handle on lease `id` (for servers that receive lease ids over the wire). */
  leaseHandle(id: string, ttlMs: number): Lease {
    return { id, ttlMs, keepAliveOnce: () => this.keepAliveLease(id), revoke: () => this.revokeLease(id) };
  }

  /** Renews lease `id` for its TTL from now; resolves with that TTL. */
  async keepAliveLease(id: string): Promise<number> {
    this.checkOpen();
    const lease = this.leases.get(id);
    if (!lease) throw leaseExpired(id);
    lease.timer.cancel();
    lease.timer = this.clock.setTimeout(() => this.expire(id), lease.ttlMs);
    return lease.ttlMs;
  }

  /** Revokes lease `id`, deleting its keys; LEASE_EXPIRED if it is already gone. */
  async revokeLease(id: string): Promise<void> {
    this.checkOpen();
    if (!this.leases.has(id)) throw leaseExpired(id);
    this.dropLease(id);
  }

  async get(key: string): Promise<KeyValue | null> {
    this.checkOpen();
    checkKey(key);
    return this.read(key);
  }

  async getPrefix(prefix: string): Promise<KeyValue[]> {
    this.checkOpen();
    checkPrefix(prefix);
    const out: KeyValue[] = [];
    for (const [key, stored] of this.keys) if (key.startsWith(prefix)) out.push(toKeyValue(key, stored));
    // Sorted by bytes like etcd, not by UTF-16 code units as a plain string compare would.
    return out.sort((a, b) => Buffer.compare(Buffer.from(a.key), Buffer.from(b.key)));
  }

  async put(key: string, value: Buffer, options: { leaseId?: string } = {}): Promise<number> {
    this.checkOpen();
    checkPut(key, value, options);
    return this.write(key, value, options.leaseId);
  }

  async compareAndSet(key: string, value: Buffer, options: CasOptions): Promise<CasResult> {
    this.checkOpen();
    checkCas(key, value, options);
    const stored = this.keys.get(key);
    if ((stored?.modRevision ?? 0) !== options.expectedModRevision) return { ok: false, revision: this.revision, current: this.read(key) };
    return { ok: true, revision: this.write(key, value, options.leaseId), current: null };
  }

  async delete(key: string, options: { expectedModRevision?: number } = {}): Promise<CasResult> {
    this.checkOpen();
    checkKey(key);
    if (options.expectedModRevision !== undefined) checkRevision(options.expectedModRevision, 'expectedModRevision');
    const stored = this.keys.get(key);
    if (options.expectedModRevision !== undefined && (stored?.modRevision ?? 0) !== options.expectedModRevision) {
      return { ok: false, revision: this.revision, current: this.read(key) };
    }
    // Deleting a missing key changes nothing, so it does not bump the revision (as in etcd).
    if (!stored) return { ok: true, revision: this.revision, current: null };
    this.revision++;
    this.removeKey(key, stored);
    this.changed();
    return { ok: true, revision: this.revision, current: null };
  }

  async txn(request: TxnRequest): Promise<TxnResult> {
    this.checkOpen();
    checkTxn(request);
    const holds = request.compares.every((c) => {
      const stored = this.keys.get(c.key);
      return ((c.target === 'mod' ? stored?.modRevision : stored?.createRevision) ?? 0) === c.revision;
    });
    if (!holds) return { ok: false, revision: this.revision, current: request.compares.map((c) => this.read(c.key)) };
    // Everything that can fail is checked before anything changes: all or nothing.
    let added = 0;
    for (const op of request.ops) {
      if (op.type !== 'put') continue;
      if (op.leaseId !== undefined && op.leaseId !== NO_LEASE && !this.leases.has(op.leaseId)) throw leaseExpired(op.leaseId);
      if (!this.keys.has(op.key)) added++;
    }
    if (added > 0 && this.keys.size + added > this.keysMax) throw new EdgeqError('ARBITER_UNAVAILABLE', `too many keys (keysMax ${this.keysMax})`, { details: { keysMax: this.keysMax } });
    const doomed = (op: TxnRequest['ops'][number]): string[] =>
      op.type === 'delete' ? (this.keys.has(op.key) ? [op.key] : []) : op.type === 'deletePrefix' ? [...this.keys.keys()].filter((k) => k.startsWith(op.prefix)).sort() : [];
    // Deleting only missing keys changes nothing, so it does not bump the revision (as in etcd).
    if (request.ops.every((op) => op.type !== 'put' && doomed(op).length === 0)) return { ok: true, revision: this.revision, current: [] };
    this.revision++;
    for (const op of request.ops) {
      if (op.type === 'put') this.writeAt(op.key, op.value, op.leaseId);
      else for (const key of doomed(op)) this.removeKey(key, this.keys.get(key)!);
    }
    this.changed();
    return { ok: true, revision: this.revision, current: [] };
  }

  async watchPrefix(prefix: string, onEvent: (e: WatchEvent) => void, options: { fromRevision?: number; onError?: (err: Error) => void } = {}): Promise<Watch> {
    this.checkOpen();
    checkPrefix(prefix);
    const from = options.fromRevision ?? this.revision;
    checkRevision(from, 'fromRevision');
    if (from < this.compactRevision) throw compactedError(from, this.compactRevision);
    if (this.watchers.size >= this.watchesMax) throw new EdgeqError('ARBITER_UNAVAILABLE', `too many watches (watchesMax ${this.watchesMax})`, { details: { watchesMax: this.watchesMax } });
    const watcher: Watcher = { prefix, onEvent, onError: options.onError, pending: [], scheduled: false, closed: false };
    this.watchers.add(watcher);
    for (const e of this.history) if (e.modRevision > from && e.key.startsWith(prefix)) this.enqueue(watcher, e);
    return {
      close: async () => {
        watcher.closed = true;
        watcher.pending = [];
        this.watchers.delete(watcher);
      },
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const lease of this.leases.values()) lease.timer.cancel();
    for (const w of this.watchers) w.closed = true;
    this.watchers.clear();
  }

  /**
   * The persistent state: keys (with their lease ids), revision and the kept history. Leases
   * themselves are not included: their deadlines mean nothing to a later process.
   */
  snapshot(historyEventsMax = this.historyEventsMax): ArbiterSnapshot {
    const history = this.history.slice(Math.max(0, this.history.length - historyEventsMax));
    const dropped = this.history.length - history.length;
    const compactRevision = dropped > 0 ? (this.history[dropped - 1]?.modRevision ?? this.compactRevision) : this.compactRevision;
    return {
      format: 1,
      revision: this.revision,
      compactRevision,
      keys: [...this.keys].map(([key, s]) => ({ key, value: s.value.toString('base64'), createRevision: s.createRevision, modRevision: s.modRevision, leaseId: s.leaseId })),
      history: history.map((e) => ({ type: e.type, key: e.key, value: e.value.toString('base64'), modRevision: e.modRevision })),
    };
  }

  private restore(snap: ArbiterSnapshot): void {
    this.revision = snap.revision;
    this.compactRevision = snap.compactRevision;
    for (const k of snap.keys) this.keys.set(k.key, { value: Buffer.from(k.value, 'base64'), createRevision: k.createRevision, modRevision: k.modRevision, leaseId: k.leaseId });
    this.history = snap.history.map((e) => ({ type: e.type, key: e.key, value: Buffer.from(e.value, 'base64'), modRevision: e.modRevision }));
    this.trimHistory();
    // The leases died with the previous process: their keys go now, in one revision that
    // watchers resuming from before the restart will see as deletes.
    const orphans = [...this.keys].filter(([, s]) => s.leaseId !== NO_LEASE);
    if (orphans.length === 0) return;
    this.revision++;
    for (const [key, stored] of orphans) this.removeKey(key, stored);
    this.logger.info({ keys: orphans.length, revision: this.revision }, 'dropped keys of leases lost in the restart');
  }

  private checkOpen(): void {
    if (this.closed) throw new EdgeqError('ARBITER_UNAVAILABLE', 'arbiter is closed');
  }

  private read(key: string): KeyValue | null {
    const stored = this.keys.get(key);
    return stored ? toKeyValue(key, stored) : null;
  }

  /** Writes after every check passed; returns the new revision. */
  private write(key: string, value: Buffer, leaseId: string | undefined): number {
    if (leaseId !== undefined && leaseId !== NO_LEASE && !this.leases.has(leaseId)) throw leaseExpired(leaseId);
    if (!this.keys.has(key) && this.keys.size >= this.keysMax) throw new EdgeqError('ARBITER_UNAVAILABLE', `too many keys (keysMax ${this.keysMax})`, { details: { keysMax: this.keysMax } });
    this.revision++;
    this.writeAt(key, value, leaseId);
    this.changed();
    return this.revision;
  }

  /** Stores a checked write at the current revision (the caller bumped it) and records the event. */
  private writeAt(key: string, value: Buffer, leaseId: string | undefined): void {
    const lease = leaseId === undefined || leaseId === NO_LEASE ? undefined : this.leases.get(leaseId);
    const prev = this.keys.get(key);
    if (prev && prev.leaseId !== NO_LEASE) this.leases.get(prev.leaseId)?.keys.delete(key);
    // Copied so a caller reusing its buffer cannot change the stored value.
    const stored: StoredKey = { value: Buffer.from(value), createRevision: prev?.createRevision ?? this.revision, modRevision: this.revision, leaseId: lease?.id ?? NO_LEASE };
    this.keys.set(key, stored);
    lease?.keys.add(key);
    this.record({ type: 'put', key, value: stored.value, modRevision: this.revision });
  }

  /** Removes a key at the current revision (the caller bumped it) and records the delete. */
  private removeKey(key: string, stored: StoredKey): void {
    this.keys.delete(key);
    if (stored.leaseId !== NO_LEASE) this.leases.get(stored.leaseId)?.keys.delete(key);
    this.record({ type: 'delete', key, value: Buffer.alloc(0), modRevision: this.revision });
  }

  private expire(id: string): void {
    if (this.closed || !this.leases.has(id)) return;
    this.logger.debug({ leaseId: id }, 'lease expired');
    this.dropLease(id);
  }

  private dropLease(id: string): void {
    const lease = this.leases.get(id);
    if (!lease) return;
    lease.timer.cancel();
    this.leases.delete(id);
    if (lease.keys.size === 0) return;
    this.revision++;
    for (const key of [...lease.keys].sort()) {
      const stored = this.keys.get(key);
      if (stored) this.removeKey(key, stored);
    }
    this.changed();
  }

  private record(e: WatchEvent): void {
    this.history.push(e);
    this.trimHistory();
    for (const w of this.watchers) if (e.key.startsWith(w.prefix)) this.enqueue(w, e);
  }

  private trimHistory(): void {
    if (this.history.length <= this.historyEventsMax) return;
    const drop = this.history.length - this.historyEventsMax;
    const last = this.history[drop - 1];
    if (last) this.compactRevision = last.modRevision;
    this.history = this.history.slice(drop);
  }

  private enqueue(w: Watcher, e: WatchEvent): void {
    if (w.closed) return;
    if (w.pending.length >= this.watchPendingEventsMax) {
      // A watcher this far behind would make us hold unbounded events: break it, as etcd cancels
      // a slow watcher; its owner resumes from its last revision or re-reads.
      w.closed = true;
      w.pending = [];
      this.watchers.delete(w);
      const err = new EdgeqError('ARBITER_UNAVAILABLE', `watch fell ${this.watchPendingEventsMax} events behind`, { details: { prefix: w.prefix } });
      queueMicrotask(() => w.onError?.(err));
      return;
    }
    w.pending.push(e);
    if (w.scheduled) return;
    w.scheduled = true;
    queueMicrotask(() => this.drain(w));
  }

  private drain(w: Watcher): void {
    w.scheduled = false;
    while (!w.closed && w.pending.length > 0) {
      const e = w.pending.shift()!;
      try {
        w.onEvent({ ...e, value: Buffer.from(e.value) });
      } catch (err) {
        this.logger.error({ err, prefix: w.prefix }, 'watch handler threw');
      }
    }
  }

  private changed(): void {
    this.onChange?.();
  }
}

function toKeyValue(key: string, s: StoredKey): KeyValue {
  return { key, value: Buffer.from(s.value), createRevision: s.createRevision, modRevision: s.modRevision, leaseId: s.leaseId };
}

function leaseExpired(id: string): EdgeqError {
  return new EdgeqError('LEASE_EXPIRED', `lease ${id} has expired or was revoked`, { details: { leaseId: id } });
}

/** A random non-zero 63-bit id in decimal, like etcd's, so ids never repeat across restarts. */
function newLeaseId(): string {
  const id = randomBytes(8).readBigUInt64BE() & 0x7fff_ffff_ffff_ffffn;
  return id === 0n ? '1' : id.toString();
}
