/**
 * A cell of real processes for crash, partition and failover tests: one embedded arbiter process
 * (or an etcd cluster given by its endpoints) and N `edgeq broker` processes joined to it. Brokers
 * can be killed, stopped (SIGSTOP), resumed and restarted on the same data folder and port.
 */
import { spawnBroker, type BrokerProcess } from './broker-process.ts';
import { spawnArbiter, type ArbiterProcess } from './arbiter-process.ts';
import { tempDir } from './tmp.ts';

/** Options of a process cell. */
export interface ProcessCellOptions {
  size?: number;
  leaseTtlMs?: number;
  replicaLagTimeMaxMs?: number;
  /** Use these etcd endpoints instead of starting an embedded arbiter. */
  etcdEndpoints?: string[];
  /** Route broker→arbiter traffic through this (e.g. a blackhole-able proxy): id → endpoint. */
  arbiterEndpointFor?: (brokerId: number, endpoint: string) => string;
  env?: Record<string, string>;
}

/** A running cell of processes. */
export class ProcessCell {
  arbiter: ArbiterProcess | null = null;
  readonly brokers = new Map<number, BrokerProcess>();
  private readonly dirs = new Map<number, string>();
  private readonly ports = new Map<number, number>();
  private endpoint = '';

  constructor(readonly options: ProcessCellOptions = {}) {}

  get size(): number {
    return this.options.size ?? 3;
  }

  async start(): Promise<this> {
    if (this.options.etcdEndpoints) this.endpoint = this.options.etcdEndpoints.join(',');
    else {
      this.arbiter = await spawnArbiter({ dataDir: await tempDir('edgeq-arbiter-') });
      this.endpoint = `127.0.0.1:${this.arbiter.port}`;
    }
    await Promise.all(Array.from({ length: this.size }, (_, i) => this.startBroker(i + 1)));
    return this;
  }

  get arbiterEndpoint(): string {
    return this.endpoint;
  }

  async startBroker(id: number): Promise<BrokerProcess> {
    const dir = this.dirs.get(id) ?? (await tempDir(`edgeq-pcell-${id}-`));
    this.dirs.set(id, dir);
    const endpoint = this.options.arbiterEndpointFor ? this.options.arbiterEndpointFor(id, this.endpoint) : this.endpoint;
    const proc = await spawnBroker({
      dataDir: dir,
      id,
      port: this.ports.get(id) ?? 0,
      args: ['--arbiter', this.options.etcdEndpoints ? 'etcd' : 'embedded', '--arbiter-endpoints', endpoint, '--cell-id', 'test'],
      env: {
        EDGEQ_CELL__LEASE_TTL_MS: String(this.options.leaseTtlMs ?? 2000),
        EDGEQ_CELL__SIZE: String(this.size),
        EDGEQ_CELL__REPLICA_LAG_TIME_MAX_MS: String(this.options.replicaLagTimeMaxMs ?? 3000),
        ...this.options.env,
      },
    });
    this.ports.set(id, proc.port);
    this.brokers.set(id, proc);
    return proc;
  }

  /** The data folder of broker `id`. */
  dirOf(id: number): string {
    return this.dirs.get(id)!;
  }

  portOf(id: number): number {
    return this.ports.get(id)!;
  }

  addresses(): string[] {
    return [...this.ports.values()].map((p) => `127.0.0.1:${p}`);
  }

  /** SIGKILLs broker `id` and waits for it to be gone. */
  async kill(id: number): Promise<void> {
    const b = this.brokers.get(id);
    this.brokers.delete(id);
    if (b) await b.kill('SIGKILL');
  }

  /** SIGSTOPs broker `id`: it keeps its sockets but answers nothing (a frozen process). */
  pause(id: number): void {
    this.brokers.get(id)?.child.kill('SIGSTOP');
  }

  /** SIGCONTs broker `id` after `pause`. */
  resume(id: number): void {
    this.brokers.get(id)?.child.kill('SIGCONT');
  }

  async close(): Promise<void> {
    for (const b of this.brokers.values()) b.child.kill('SIGCONT');
    await Promise.all([...this.brokers.values()].map((b) => b.kill('SIGTERM')));
    this.brokers.clear();
    await this.arbiter?.kill('SIGTERM');
  }
}
