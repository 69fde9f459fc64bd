/**
 * In-process cells for tests: several real brokers (real TCP, real logs on disk) sharing one
 * arbiter, each with its own cell controller. Stopping a broker revokes its lease (a clean stop)
 * or just abandons it (a crash: the lease runs out).
 */
import type { Arbiter } from '../../region/arbiter/index.ts';
import { MemoryArbiter } from '../../region/arbiter/index.ts';
import { ArbiterCellController, type CellControllerOptions } from '../../region/cell/index.ts';
import { Broker, type BrokerOptions } from '../../src/broker/index.ts';
import { tempDir } from './tmp.ts';

/** An arbiter view whose close() leaves the shared arbiter running. */
export function sharedView(arbiter: Arbiter): Arbiter {
  return {
    grantLease: (ttl) => arbiter.grantLease(ttl),
    get: (k) => arbiter.get(k),
    getPrefix: (p) => arbiter.getPrefix(p),
    put: (k, v, o) => arbiter.put(k, v, o),
    compareAndSet: (k, v, o) => arbiter.compareAndSet(k, v, o),
    delete: (k, o) => arbiter.delete(k, o),
    txn: (r) => arbiter.txn(r),
    watchPrefix: (p, f, o) => arbiter.watchPrefix(p, f, o),
    close: async () => undefined,
  };
}

/** Options of a test cell. */
export interface TestCellOptions {
  size?: number;
  cell?: Partial<CellControllerOptions>;
  broker?: Partial<BrokerOptions>;
}

/** A cell of in-process brokers. */
export class TestCell {
  readonly arbiter = new MemoryArbiter();
  readonly brokers = new Map<number, Broker>();
  private readonly dirs = new Map<number, string>();
  private readonly ports = new Map<number, number>();

  constructor(private readonly options: TestCellOptions = {}) {}

  get size(): number {
    return this.options.size ?? 3;
  }

  async start(): Promise<this> {
    await Promise.all(Array.from({ length: this.size }, (_, i) => this.startBroker(i + 1)));
    return this;
  }

  /** Starts (or restarts, on the same folder and port) broker `id`. */
  async startBroker(id: number): Promise<Broker> {
    const dir = this.dirs.get(id) ?? (await tempDir(`edgeq-cell-${id}-`));
    this.dirs.set(id, dir);
    const cell = new ArbiterCellController({
      arbiter: sharedView(this.arbiter),
      cellId: 'test',
      leaseTtlMs: 1000,
      cellSize: this.size,
      electionDelayMs: 50,
      ...this.options.cell,
    });
    const b = await Broker.start({
      dataDir: dir,
      port: this.ports.get(id) ?? 0,
      brokerId: id,
      cell,
      replicaLagTimeMaxMs: 10_000,
      replicaFetch: { replicaFetchWaitMs: 200 },
      ...this.options.broker,
    });
    this.ports.set(id, b.port);
    this.brokers.set(id, b);
    return b;
  }

  /** Stops broker `id` cleanly (its lease is revoked: others take over at once). */
  async stopBroker(id: number): Promise<void> {
    const b = this.brokers.get(id);
    this.brokers.delete(id);
    await b?.close();
  }

  addresses(): string[] {
    return [...this.ports.values()].map((p) => `127.0.0.1:${p}`);
  }

  /** The broker leading `topic`-`partition` now, per the arbiter's state as broker `via` sees it. */
  leaderOf(topic: string, partition: number): number {
    for (const b of this.brokers.values()) {
      const st = b.cell?.partitionState(topic, partition);
      if (st && st.leader >= 0 && this.brokers.has(st.leader)) return st.leader;
    }
    return -1;
  }

  async close(): Promise<void> {
    await Promise.all([...this.brokers.values()].map((b) => b.close().catch(() => undefined)));
    this.brokers.clear();
    await this.arbiter.close();
  }
}

export { eventually } from '../../src/testing/index.ts';
