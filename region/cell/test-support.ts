/**
 * Test support for the cell controller's unit tests: a broker host built on a real TopicManager
 * over MemoryStorage (so replicas change roles exactly as in a broker, without TCP or disks), an
 * arbiter view a test can cut (a dead process) or whose watches it can break, and a way to let
 * every queued microtask and storage callback run on a fake clock.
 */
import { EdgeqError, FakeClock, silentLogger, type Clock } from '../../src/core/index.ts';
import { FilePool, MemoryStorage } from '../../src/log/index.ts';
import { TopicManager, type CellHost, type Partition, type ProducerIdSource, type RecoveringReplica } from '../../src/broker/index.ts';
import type { Arbiter, CasOptions, CasResult, Lease, TxnRequest, TxnResult, Watch, WatchEvent } from '../arbiter/index.ts';

/** Rounds of setImmediate that `settle` waits: enough for an apply chain over MemoryStorage. */
const SETTLE_ROUNDS = 30;

/** Lets queued microtasks, storage callbacks and chained applies run (fake time does not move). */
export async function settle(rounds = SETTLE_ROUNDS): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/** Advances the fake clock in steps of `stepMs`, settling after each, so timers and their async work interleave as in real time. */
export async function advance(clock: FakeClock, ms: number, stepMs = 10): Promise<void> {
  for (let done = 0; done < ms; done += stepMs) {
    clock.advance(Math.min(stepMs, ms - done));
    await settle(3);
  }
  await settle();
}

/** A role change the host saw. */
export interface RoleChange {
  topic: string;
  partition: number;
  role: string;
  leaderId: number;
  epoch: number;
}

/** A CellHost over a real TopicManager on MemoryStorage. */
export interface TestHost extends CellHost {
  storage: MemoryStorage;
  roleChanges: RoleChange[];
  /** What `eligibleToLead` answers, per `topic/partition` (default true). */
  ineligible: Set<string>;
  eligibleToLead(topic: string, partition: number): boolean;
  /**
   * Recovering replicas, per `topic/partition`, with the log they report (they are not eligible
   * either); what `recoveringReplicas` answers.
   */
  recovering: Map<string, { lastEpoch: number; logEndOffset: number }>;
  recoveringReplicas(): RecoveringReplica[];
  replica(topic: string, partition?: number): Partition;
}

/** Opens a host for broker `brokerId`; pass the storage of an earlier host to "restart" it. */
export async function openTestHost(o: { brokerId: number; clock: Clock; producerIds: ProducerIdSource; storage?: MemoryStorage }): Promise<TestHost> {
  const storage = o.storage ?? new MemoryStorage();
  const dataDir = `/broker-${o.brokerId}`;
  const topics = await TopicManager.open({
    storage,
    dataDir,
    filePool: new FilePool(storage, 64),
    producerIds: o.producerIds,
    logDefaults: {},
    brokerCount: 1,
    retentionCheckIntervalMs: 60_000,
    brokerId: o.brokerId,
    bumpEpochsOnOpen: false,
    clock: o.clock,
    logger: silentLogger,
  });
  const roleChanges: RoleChange[] = [];
  const ineligible = new Set<string>();
  const recovering = new Map<string, { lastEpoch: number; logEndOffset: number }>();
  return {
    brokerId: o.brokerId,
    host: '127.0.0.1',
    port: 9000 + o.brokerId,
    region: 'test',
    topics,
    storage,
    roleChanges,
    ineligible,
    onRoleChange: (p) => {
      roleChanges.push({ topic: p.topic, partition: p.index, role: p.role, leaderId: p.leaderId, epoch: p.leaderEpoch });
      // As a broker's replica does: elected while recovering, it is recovering no more.
      if (p.role === 'leader' && recovering.delete(`${p.topic}/${p.index}`)) topics.onReplicaRecovered(p, 'became leader');
    },
    recovering,
    eligibleToLead: (topic, partition) => !ineligible.has(`${topic}/${partition}`) && !recovering.has(`${topic}/${partition}`),
    recoveringReplicas: () =>
      [...recovering].map(([k, log]) => {
        const [topic, p] = k.split('/') as [string, string];
        return { topic, topicId: topics.get(topic)?.record.id ?? '', partition: Number(p), ...log, reason: 'test' };
      }),
    replica(topic, partition = 0) {
      const p = topics.get(topic)?.partitions[partition];
      if (!p) throw new Error(`broker ${o.brokerId} holds no replica of ${topic}-${partition}`);
      return p;
    },
  };
}

/**
 * One broker's view of a shared arbiter that a test can fault: `die()` makes every later call fail
 * and silences its watches (the process is gone; its lease runs out on the arbiter's clock);
 * `cut()` does the same to a live broker whose link is down, breaking its watches with an error,
 * until `heal()`; `breakWatches()` ends every watch with an error the way a broken stream or a
 * compaction does. `beforeWrite` runs before each write is passed on (to hold or delay requests)
 * and `afterWrite` before each write's answer is returned (an answer that arrives after the
 * watch's event).
 */
export class TestArbiterView implements Arbiter {
  private dead = false;
  private isCut = false;
  private readonly watches = new Set<{ inner: Watch; onError?: (err: Error) => void }>();
  watchesOpened = 0;
  /** Transactions passed on to the arbiter. */
  txns = 0;
  beforeWrite: () => Promise<void>;
  afterWrite: () => Promise<void> = async () => undefined;

  constructor(
    private readonly inner: Arbiter,
    beforeWrite: () => Promise<void> = async () => undefined,
  ) {
    this.beforeWrite = beforeWrite;
  }

  /** Every call from now on fails with ARBITER_UNAVAILABLE; watches go silent. */
  die(): void {
    this.dead = true;
    for (const w of this.watches) void w.inner.close();
    this.watches.clear();
  }

  /** The link is down: calls fail and watches break, until `heal()`. */
  cut(): void {
    this.isCut = true;
    this.breakWatches(new EdgeqError('ARBITER_UNAVAILABLE', 'link cut by the test'));
  }

  heal(): void {
    this.isCut = false;
  }

  /** Ends every open watch: the inner watch is closed and the owner's onError is called. */
  breakWatches(err: Error = new EdgeqError('ARBITER_UNAVAILABLE', 'watch broken by the test')): void {
    const all = [...this.watches];
    this.watches.clear();
    for (const w of all) {
      void w.inner.close();
      w.onError?.(err);
    }
  }

  get openWatches(): number {
    return this.watches.size;
  }

  private check(): void {
    if (this.dead) throw new EdgeqError('ARBITER_UNAVAILABLE', 'this broker is dead (test)');
    if (this.isCut) throw new EdgeqError('ARBITER_UNAVAILABLE', 'link cut (test)');
  }

  private async written<T>(write: () => Promise<T>): Promise<T> {
    this.check();
    await this.beforeWrite();
    this.check();
    const result = await write();
    await this.afterWrite();
    return result;
  }

  async grantLease(ttlMs: number): Promise<Lease> {
    this.check();
    const lease = await this.inner.grantLease(ttlMs);
    return {
      id: lease.id,
      ttlMs: lease.ttlMs,
      keepAliveOnce: async () => {
        this.check();
        return lease.keepAliveOnce();
      },
      revoke: async () => {
        this.check();
        return lease.revoke();
      },
    };
  }

  async get(key: string) {
    this.check();
    return this.inner.get(key);
  }

  async getPrefix(prefix: string) {
    this.check();
    return this.inner.getPrefix(prefix);
  }

  put(key: string, value: Buffer, options?: { leaseId?: string }): Promise<number> {
    return this.written(() => this.inner.put(key, value, options));
  }

  compareAndSet(key: string, value: Buffer, options: CasOptions): Promise<CasResult> {
    return this.written(() => this.inner.compareAndSet(key, value, options));
  }

  delete(key: string, options?: { expectedModRevision?: number }): Promise<CasResult> {
    return this.written(() => this.inner.delete(key, options));
  }

  txn(request: TxnRequest): Promise<TxnResult> {
    return this.written(() => {
      this.txns++;
      return this.inner.txn(request);
    });
  }

  async watchPrefix(prefix: string, onEvent: (e: WatchEvent) => void, options: { fromRevision?: number; onError?: (err: Error) => void } = {}): Promise<Watch> {
    this.check();
    const entry: { inner: Watch; onError?: (err: Error) => void } = { inner: { close: async () => undefined } };
    if (options.onError) entry.onError = options.onError;
    // Registered before the inner watch starts: it may deliver replayed events before it returns.
    this.watches.add(entry);
    try {
      entry.inner = await this.inner.watchPrefix(prefix, (e) => {
        if (!this.dead && !this.isCut && this.watches.has(entry)) onEvent(e);
      }, {
        ...(options.fromRevision !== undefined ? { fromRevision: options.fromRevision } : {}),
        onError: (err) => {
          if (this.watches.delete(entry)) entry.onError?.(err);
        },
      });
    } catch (err) {
      this.watches.delete(entry);
      throw err;
    }
    this.watchesOpened++;
    return {
      close: async () => {
        this.watches.delete(entry);
        await entry.inner.close();
      },
    };
  }

  /** Leaves the shared arbiter running. */
  async close(): Promise<void> {
    this.dead = true;
    for (const w of this.watches) void w.inner.close();
    this.watches.clear();
  }
}
