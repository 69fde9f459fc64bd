/**
 * The broker: the composition root of one broker process. It opens the topics (recovering their
 * logs), the producer-id allocator and the group coordinator, wires the API handlers and serves
 * them over TCP. Everything it needs from the outside (storage, clock, logger) is injected, with
 * the real ones as defaults.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { EdgeqError, silentLogger, systemClock, type Clock, type Logger, type TimerHandle } from '../core/index.ts';
import { GroupCoordinator, OffsetStore, type CoordinatorConfig } from '../group/index.ts';
import { FilePool, FsStorage, type LogConfig, type Storage } from '../log/index.ts';
import { createHandlers } from './handlers.ts';
import { FETCH_LIMITS_DEFAULT, type FetchLimits } from './fetch-handler.ts';
import { ProducerIds } from './producer-ids.ts';
import { RequestRouter } from './request-router.ts';
import { CONNECTION_LIMITS_DEFAULT, ServerConnection, type ConnectionLimits } from './server-connection.ts';
import { TopicManager, type TopicLimits } from './topic-manager.ts';
import { CONSUMER_OFFSETS_TOPIC } from './topic-name.ts';

/** How to start a broker. */
export interface BrokerOptions {
  dataDir: string;
  /** Address to listen on; loopback unless told otherwise. */
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  brokerId?: number;
  region?: string;
  clusterId?: string;
  logDefaults?: Partial<LogConfig>;
  openFilesMax?: number;
  retentionCheckIntervalMs?: number;
  /** How often producer state is snapshotted, bounding the log scanned at restart. */
  producerSnapshotIntervalMs?: number;
  produceTimeoutMsMax?: number;
  connection?: Partial<ConnectionLimits>;
  fetch?: Partial<FetchLimits>;
  topics?: Partial<TopicLimits>;
  group?: Partial<CoordinatorConfig>;
  storage?: Storage;
  clock?: Clock;
  logger?: Logger;
}

/** A running broker. */
export class Broker {
  private snapshotTimer: TimerHandle | null = null;
  private closing: Promise<void> | null = null;

  private constructor(
    readonly brokerId: number,
    readonly host: string,
    readonly port: number,
    readonly topics: TopicManager,
    readonly groups: GroupCoordinator,
    private readonly server: Server,
    private readonly connections: Set<ServerConnection>,
    private readonly logger: Logger,
  ) {}

  /** Opens the data folder (recovering it) and starts serving. */
  static async start(options: BrokerOptions): Promise<Broker> {
    const storage = options.storage ?? new FsStorage();
    const clock = options.clock ?? systemClock;
    const brokerId = options.brokerId ?? 1;
    const host = options.host ?? '127.0.0.1';
    const logger = (options.logger ?? silentLogger).child({ broker: brokerId });
    const started = clock.monotonicMs();

    await storage.mkdir(options.dataDir);
    const filePool = new FilePool(storage, options.openFilesMax ?? 1024);
    const producerIds = await ProducerIds.open(storage, options.dataDir);
    const topics = await TopicManager.open({
      storage,
      dataDir: options.dataDir,
      filePool,
      producerIds,
      logDefaults: options.logDefaults ?? {},
      brokerCount: 1,
      retentionCheckIntervalMs: options.retentionCheckIntervalMs ?? 60_000,
      clock,
      logger,
      ...(options.topics ? { limits: options.topics } : {}),
    });
    let groups: GroupCoordinator | null = null;
    try {
      if (!topics.get(CONSUMER_OFFSETS_TOPIC)) {
        // Offsets are acknowledged to consumers, so they are synced like any acks=all write. There
        // is no compaction yet, so time retention would delete live offsets: it is off.
        await topics.create({ name: CONSUMER_OFFSETS_TOPIC, partitions: 1, config: { 'flush.policy': 'sync', 'retention.ms': '-1' } }, { internal: true });
      }
      const offsetsLog = topics.partition(CONSUMER_OFFSETS_TOPIC, 0).log;
      const offsetStore = await OffsetStore.load(offsetsLog);
      groups = new GroupCoordinator(
        {
          offsets: offsetStore,
          clock,
          logger,
          validatePartition: (topic: string, partition: number) => topics.get(topic)?.partitions[partition] !== undefined,
        },
        options.group ?? {},
      );
    } catch (err) {
      await topics.close();
      throw err;
    }

    const self = { id: brokerId, host, port: 0, region: options.region ?? 'local' };
    const handlers = createHandlers({
      self,
      clusterId: options.clusterId ?? 'edgeq-local',
      topics,
      groups,
      producerIds,
      clock,
      fetchLimits: { ...FETCH_LIMITS_DEFAULT, ...options.fetch },
      produceLimits: { produceTimeoutMsMax: options.produceTimeoutMsMax ?? 30_000 },
    });
    const router = new RequestRouter(handlers, logger);
    const limits = { ...CONNECTION_LIMITS_DEFAULT, ...options.connection };
    const connections = new Set<ServerConnection>();
    const server = createServer((socket: Socket) => {
      const c = new ServerConnection(socket, router, limits, logger);
      connections.add(c);
      void c.closed.then(() => connections.delete(c));
    });
    const port = await new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 0, host, () => {
        server.off('error', reject);
        const addr = server.address();
        resolve(typeof addr === 'object' && addr ? addr.port : 0);
      });
    }).catch(async (err: unknown) => {
      await groups?.close();
      await topics.close();
      throw new EdgeqError('BROKER_NOT_AVAILABLE', `cannot listen on ${host}:${options.port ?? 0}: ${(err as Error).message}`, { cause: err });
    });
    self.port = port;
    const broker = new Broker(brokerId, host, port, topics, groups, server, connections, logger);
    broker.scheduleSnapshots(clock, options.producerSnapshotIntervalMs ?? 60_000);
    logger.info({ host, port, dataDir: options.dataDir, topics: topics.list().length, startMs: Math.round(clock.monotonicMs() - started) }, 'broker started');
    return broker;
  }

  /** Address clients connect to. */
  get address(): string {
    return `${this.host}:${this.port}`;
  }

  /** Open client connections. */
  get connectionCount(): number {
    return this.connections.size;
  }

  /** In-flight requests and bytes of each open connection (backpressure visibility). */
  connectionStats(): { bytes: number; requests: number }[] {
    return [...this.connections].map((c) => c.inflight);
  }

  /** Stops accepting, closes connections, stops the coordinator and flushes every log. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.snapshotTimer?.cancel();
      const serverClosed = new Promise<void>((r) => this.server.close(() => r()));
      for (const c of this.connections) c.destroy();
      await serverClosed;
      await this.groups.close();
      await this.topics.close();
      this.logger.info('broker stopped');
    })();
    return this.closing;
  }

  private scheduleSnapshots(clock: Clock, intervalMs: number): void {
    const tick = () => {
      void this.topics.snapshotProducers().finally(() => {
        if (!this.closing) this.snapshotTimer = clock.setTimeout(tick, intervalMs);
      });
    };
    this.snapshotTimer = clock.setTimeout(tick, intervalMs);
  }
}
