/**
 * The broker: the composition root of one broker process. It opens the topics (recovering their
 * logs), the producer-id source and the group coordinator, wires the API handlers and serves
 * them over TCP. Alone it leads every partition it holds; with a `cell` controller it joins a
 * regional cell: the controller (region/cell) says which replicas it leads or follows, followers
 * fetch from their leaders, and leaders move the high watermark with the in-sync replicas.
 * Storage, clock and logger are injected, with the real ones as defaults.
 */
import type { Server, Socket } from 'node:net';
import { Connection } from '../protocol/index.ts';
import type { TlsClientAuth, TlsMaterial } from '../tls/index.ts';
import { BrokerAuth, type BinaryKeysFile, type BinaryPrincipal } from './broker-auth.ts';
import { createListener } from './listener.ts';
import { EdgeqError, silentLogger, systemClock, type Clock, type Logger, type TimerHandle } from '../core/index.ts';
import { GroupCoordinator, OffsetStore, type CoordinatorConfig } from '../group/index.ts';
import { FilePool, FsStorage, type LogConfig, type Storage } from '../log/index.ts';
import { ADMIN_HOST, BrokerMetrics, startAdminServer, type AdminServer } from '../metrics/index.ts';
import type { BrokerInfo } from '../protocol/index.ts';
import type { CellController, ProducerIdSource } from './controller.ts';
import { FETCH_LIMITS_DEFAULT, type FetchLimits } from './fetch-handler.ts';
import { createHandlers } from './handlers.ts';
import type { Partition } from './partition.ts';
import { ProducerIds } from './producer-ids.ts';
import { ReplicaFetchers, type ReplicaFetchLimits } from './replica-fetcher.ts';
import { brokerReadiness } from './readiness.ts';
import { RequestRouter } from './request-router.ts';
import { CONNECTION_LIMITS_DEFAULT, ServerConnection, type ConnectionLimits, type ConnectionStats } from './server-connection.ts';
import { ClientQuotas, type QuotaBackend } from './client-quotas.ts';
import { QuotaFile } from './quota-file.ts';
import { TopicManager, type TopicLimits } from './topic-manager.ts';
import { CONSUMER_OFFSETS_TOPIC } from './topic-name.ts';

/** Kafka's default for replica.high.watermark.checkpoint.interval.ms. */
export const HW_CHECKPOINT_INTERVAL_MS_DEFAULT = 5000;

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
  /**
   * How often every replica's high watermark is checkpointed (Kafka's
   * replica.high.watermark.checkpoint.interval.ms): how stale-low the high watermarks can be
   * after a crash, which only delays what consumers see until followers fetch again.
   */
  hwCheckpointIntervalMs?: number;
  produceTimeoutMsMax?: number;
  /** A follower not caught up for this long leaves the ISR. */
  replicaLagTimeMaxMs?: number;
  connection?: Partial<ConnectionLimits>;
  fetch?: Partial<FetchLimits>;
  replicaFetch?: Partial<ReplicaFetchLimits>;
  topics?: Partial<TopicLimits>;
  group?: Partial<CoordinatorConfig>;
  /**
   * Serves `GET /metrics` on 127.0.0.1 at this port (0 picks a free one); absent: no admin
   * endpoint. (The config key `broker.adminPort` uses 0 for "off"; the CLI omits it then.)
   */
  adminPort?: number;
  /** Address of the admin endpoint; 127.0.0.1 by default (a container's probes need its own address). */
  adminHost?: string;
  /** Where produce, fetch and log figures go; a fresh registry of the broker's own by default. */
  metrics?: BrokerMetrics;
  /** Joins a cell through this controller; absent: a lone broker. */
  cell?: CellController;
  /**
   * Serves the protocol over TLS with this material (reloaded as its files change), asking
   * clients for certificates per `clientAuth`; the replica fetchers present the same certificate
   * to their leaders. Absent: plaintext TCP.
   */
  tls?: { material: TlsMaterial; clientAuth: TlsClientAuth };
  /**
   * Authentication and authorization of binary clients: a keys file (path, or its parsed
   * content) mapping API keys and certificate identities to principals (src/broker/broker-auth.ts).
   * Absent: every request is allowed (the library default and the local deployment; the CLI
   * refuses to start without keys unless told `--auth none`).
   */
  auth?: { keys: string | BinaryKeysFile };
  storage?: Storage;
  clock?: Clock;
  logger?: Logger;
}

/** A running broker. */
export class Broker {
  private snapshotTimer: TimerHandle | null = null;
  private hwTimer: TimerHandle | null = null;
  private lagTimer: TimerHandle | null = null;
  private closing: Promise<void> | null = null;
  private readonly connections = new Set<ServerConnection>();
  /** Set once start() has finished (readiness says not ready before). */
  private started = false;
  private server: Server | null = null;
  /** Authentication of binary clients; null: off. */
  private auth: BrokerAuth | null = null;
  private stopFollowingTls: (() => void) | null = null;
  private admin: AdminServer | null = null;
  private groupsNow: GroupCoordinator | null = null;
  /** Serialises opening and closing the coordinator as leadership of the offsets topic moves. */
  private groupChain: Promise<unknown> = Promise.resolve();
  readonly fetchers: ReplicaFetchers | null;
  host: string;
  port = 0;

  private constructor(
    readonly brokerId: number,
    readonly topics: TopicManager,
    readonly cell: CellController | null,
    /** This broker's metrics (scrape them with `metrics.scrape()` or over the admin port). */
    readonly metrics: BrokerMetrics,
    private readonly producerIds: ProducerIdSource,
    /** Quotas of binary-protocol clients: in the cell's arbiter, or this broker's quotas.json. */
    readonly quotas: ClientQuotas,
    private readonly options: BrokerOptions,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {
    this.host = options.host ?? '127.0.0.1';
    const tls = options.tls?.material;
    this.fetchers = cell
      ? new ReplicaFetchers({
          brokerId,
          addressOf: (id) => cell.brokers().find((b) => b.id === id),
          // Followers present the broker's certificate to their leaders (mTLS inside the cell).
          ...(tls ? { connect: (address, clientId) => Connection.connect(address, { clientId, connectTimeoutMs: 2000, clock, tls }) } : {}),
          ...(options.replicaFetch ? { limits: options.replicaFetch } : {}),
          clock,
          logger,
        })
      : null;
  }

  /** The group coordinator while this broker hosts it. */
  get groups(): GroupCoordinator | null {
    return this.groupsNow;
  }

  /** Opens the data folder (recovering it) and starts serving. */
  static async start(options: BrokerOptions): Promise<Broker> {
    const storage = options.storage ?? new FsStorage();
    const clock = options.clock ?? systemClock;
    const brokerId = options.brokerId ?? 1;
    const logger = (options.logger ?? silentLogger).child({ broker: brokerId });
    const started = clock.monotonicMs();
    const cell = options.cell ?? null;

    await storage.mkdir(options.dataDir);
    const filePool = new FilePool(storage, options.openFilesMax ?? 1024);
    const producerIds = cell ?? (await ProducerIds.open(storage, options.dataDir));
    // Created before the topics so every partition log reports its fsyncs and appends.
    const metrics = options.metrics ?? new BrokerMetrics({ defaultLabels: { broker: String(brokerId) } });
    const topics = await TopicManager.open({
      storage,
      dataDir: options.dataDir,
      filePool,
      producerIds,
      logDefaults: options.logDefaults ?? {},
      brokerCount: 1,
      retentionCheckIntervalMs: options.retentionCheckIntervalMs ?? 60_000,
      brokerId,
      bumpEpochsOnOpen: cell === null,
      clock,
      logger,
      observer: metrics.logObserver,
      ...(options.topics ? { limits: options.topics } : {}),
    }).catch((err: unknown) => {
      // Nothing else holds the metrics yet: stop their event-loop monitor here.
      if (!options.metrics) metrics.close();
      throw err;
    });
    metrics.watchPartitions(topics);
    // A cell keeps quotas in its arbiter (the view hands them over as the controller starts); a
    // lone broker in its data folder.
    const alterQuotas = cell?.alterQuotas?.bind(cell);
    let backend: QuotaBackend;
    try {
      backend = alterQuotas ? { kind: 'cell', alterQuotas } : { kind: 'file', file: await QuotaFile.open(storage, options.dataDir) };
    } catch (err) {
      await topics.close().catch(() => undefined);
      if (!options.metrics) metrics.close();
      throw err;
    }
    const quotas = new ClientQuotas(backend, { clock, logger, metrics });
    let auth: BrokerAuth | null = null;
    try {
      if (options.auth) {
        const keys = options.auth.keys;
        auth = typeof keys === 'string' ? await BrokerAuth.fromFile(keys, { registry: metrics.registry }) : BrokerAuth.fromJson(keys, { registry: metrics.registry });
      }
    } catch (err) {
      await topics.close().catch(() => undefined);
      if (!options.metrics) metrics.close();
      throw err;
    }
    const broker = new Broker(brokerId, topics, cell, metrics, producerIds, quotas, options, clock, logger);
    broker.auth = auth;
    try {
      await broker.listen();
      if (options.adminPort !== undefined) await broker.listenAdmin(options.adminPort);
      if (cell) {
        topics.onReplicaRecovered = (p) => cell.replicaRecovered?.(p.topic, p.index);
        // The cell decides topics and roles; the listener is up first so followers can fetch.
        await cell.start({
          brokerId,
          host: broker.host,
          port: broker.port,
          region: options.region ?? 'local',
          topics,
          onRoleChange: (p) => broker.onRoleChange(p),
          onQuotaChange: (tenant, topic, quota) => quotas.onCellChange(tenant, topic, quota),
          // A replica that may lack records it once held leads only once caught up, unless it is
          // the partition's only replica (nothing better exists).
          eligibleToLead: (topic, partition) => {
            const p = topics.get(topic)?.partitions[partition];
            return p !== undefined && (p.recovering === null || p.replicas.length <= 1);
          },
          recoveringReplicas: () =>
            topics
              .localPartitions()
              .filter((p) => p.recovering !== null)
              .map((p) => ({ topic: p.topic, topicId: p.topicId, partition: p.index, lastEpoch: p.epochs.latestEpoch, logEndOffset: p.logEndOffset, reason: p.recovering!.reason })),
        });
      } else {
        if (!topics.get(CONSUMER_OFFSETS_TOPIC)) {
          // Offsets are acknowledged to consumers, so they are synced like any acks=all write. There
          // is no compaction yet, so time retention would delete live offsets: it is off.
          await topics.create({ name: CONSUMER_OFFSETS_TOPIC, partitions: 1, config: { 'flush.policy': 'sync', 'retention.ms': '-1' } }, { internal: true });
        }
        await broker.openGroups(topics.partition(CONSUMER_OFFSETS_TOPIC, 0));
      }
    } catch (err) {
      await broker.close().catch(() => undefined);
      throw err;
    }
    broker.scheduleSnapshots(options.producerSnapshotIntervalMs ?? 60_000);
    broker.scheduleHwCheckpoints(options.hwCheckpointIntervalMs ?? HW_CHECKPOINT_INTERVAL_MS_DEFAULT);
    if (cell) broker.scheduleLagChecks(options.replicaLagTimeMaxMs ?? 10_000);
    broker.started = true;
    logger.info(
      { host: broker.host, port: broker.port, tls: options.tls ? options.tls.clientAuth : false, auth: auth !== null, adminPort: broker.adminPort, dataDir: options.dataDir, cell: cell?.cellId ?? null, topics: topics.list().length, startMs: Math.round(clock.monotonicMs() - started) },
      'broker started',
    );
    return broker;
  }

  private async listen(): Promise<void> {
    const o = this.options;
    const self: BrokerInfo = { id: this.brokerId, host: this.host, port: 0, region: o.region ?? 'local' };
    const handlers = createHandlers({
      self,
      clusterId: this.cell?.cellId ?? o.clusterId ?? 'edgeq-local',
      topics: this.topics,
      groups: () => this.groupsNow,
      coordinator: () => this.coordinatorInfo(self),
      producerIds: this.producerIds,
      cell: this.cell,
      pid: process.pid,
      clock: this.clock,
      fetchLimits: { ...FETCH_LIMITS_DEFAULT, ...o.fetch },
      produceLimits: { produceTimeoutMsMax: o.produceTimeoutMsMax ?? 30_000 },
      metrics: this.metrics,
      quotas: this.quotas,
      auth: this.auth,
    });
    const router = new RequestRouter(handlers, this.logger, this.auth);
    const limits = { ...CONNECTION_LIMITS_DEFAULT, ...o.connection };
    const serve = (socket: Socket, principal: BinaryPrincipal | null) => {
      const c = new ServerConnection(socket, router, limits, this.logger, this.clock, principal);
      this.connections.add(c);
      void c.closed.then(() => this.connections.delete(c));
    };
    const { server, stop } = createListener({ tls: o.tls, auth: this.auth, registry: this.metrics.registry, logger: this.logger, serve });
    this.stopFollowingTls = stop;
    this.server = server;
    this.port = await new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(o.port ?? 0, this.host, () => {
        server.off('error', reject);
        const addr = server.address();
        resolve(typeof addr === 'object' && addr ? addr.port : 0);
      });
    }).catch((err: unknown) => {
      throw new EdgeqError('BROKER_NOT_AVAILABLE', `cannot listen on ${this.host}:${o.port ?? 0}: ${(err as Error).message}`, { cause: err });
    });
    self.port = this.port;
  }

  private async listenAdmin(port: number): Promise<void> {
    const host = this.options.adminHost ?? ADMIN_HOST;
    // /healthz: the process serves; /readyz: caught up in its cell (src/broker/readiness.ts).
    const routes = {
      '/healthz': () => ({ status: 200, body: { status: 'ok' } }),
      '/readyz': () => {
        const r = brokerReadiness({ brokerId: this.brokerId, started: this.started && !this.closing, cell: this.cell, replicas: this.topics.localPartitions() });
        return { status: r.ready ? 200 : 503, body: r };
      },
    };
    this.admin = await startAdminServer(this.metrics, { port, host, routes }).catch((err: unknown) => {
      throw new EdgeqError('BROKER_NOT_AVAILABLE', `cannot serve metrics on ${host}:${port}: ${(err as Error).message}`, { cause: err });
    });
  }

  /** The port serving `GET /metrics`, or null when the admin endpoint is off. */
  get adminPort(): number | null {
    return this.admin?.port ?? null;
  }

  private coordinatorInfo(self: BrokerInfo): BrokerInfo | null {
    if (!this.cell) return self;
    const st = this.cell.partitionState(CONSUMER_OFFSETS_TOPIC, 0);
    if (!st || st.leader < 0) return null;
    return this.cell.brokers().find((b) => b.id === st.leader) ?? null;
  }

  /** A replica's role changed: fetch as a follower, host the coordinator as its leader. */
  private onRoleChange(p: Partition): void {
    if (p.role === 'follower') this.fetchers?.follow(p);
    else this.fetchers?.unfollow(p);
    if (p.topic === CONSUMER_OFFSETS_TOPIC && p.index === 0) {
      if (p.role === 'leader') void this.openGroups(p);
      else void this.closeGroups();
    }
  }

  private openGroups(p: Partition): Promise<void> {
    const run = this.groupChain.then(async () => {
      if (this.groupsNow || this.closing) return;
      // Commits go through the partition, so in a cell they answer only once the ISR holds them.
      const log = {
        get logStartOffset() {
          return p.logStartOffset;
        },
        get logEndOffset() {
          return p.logEndOffset;
        },
        read: (offset: number, maxBytes: number) => p.log.read(offset, maxBytes),
        append: (batch: Buffer) => p.produce(batch, { acks: 'all' }),
      };
      const offsets = await OffsetStore.load(log as never, { clock: this.clock, logger: this.logger });
      this.groupsNow = new GroupCoordinator(
        {
          offsets,
          clock: this.clock,
          logger: this.logger,
          validatePartition: (topic: string, partition: number) => {
            const t = this.topics.get(topic);
            return t !== undefined && partition >= 0 && partition < t.partitions.length;
          },
          topicIdOf: (topic: string) => this.topics.get(topic)?.record.id,
        },
        this.options.group ?? {},
      );
      this.logger.info('group coordinator started');
    });
    this.groupChain = run.catch((err: unknown) => this.logger.error({ err }, 'could not start the group coordinator'));
    return run;
  }

  private closeGroups(): Promise<void> {
    const run = this.groupChain.then(async () => {
      const g = this.groupsNow;
      this.groupsNow = null;
      await g?.close();
    });
    this.groupChain = run.catch(() => undefined);
    return run;
  }

  /** Address clients connect to. */
  get address(): string {
    return `${this.host}:${this.port}`;
  }

  /** Open client connections. */
  get connectionCount(): number {
    return this.connections.size;
  }

  /** In-flight requests and bytes, throttle state and bytes read of each open connection. */
  connectionStats(): ConnectionStats[] {
    return [...this.connections].map((c) => c.stats);
  }

  /** Stops accepting, closes connections, leaves the cell, stops the coordinator, flushes every log. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.snapshotTimer?.cancel();
      this.hwTimer?.cancel();
      this.lagTimer?.cancel();
      this.stopFollowingTls?.();
      const server = this.server;
      const serverClosed = server ? new Promise<void>((r) => server.close(() => r())) : Promise.resolve();
      for (const c of this.connections) c.destroy();
      await serverClosed;
      await this.admin?.close();
      await this.fetchers?.close();
      await this.cell?.close();
      await this.closeGroups();
      await this.groupChain.catch(() => undefined);
      await this.topics.close();
      // Only a registry the broker made is stopped: a caller's may outlive it.
      if (!this.options.metrics) this.metrics.close();
      this.logger.info('broker stopped');
    })();
    return this.closing;
  }

  private scheduleSnapshots(intervalMs: number): void {
    const tick = () => {
      void this.topics.snapshotProducers().finally(() => {
        if (!this.closing) this.snapshotTimer = this.clock.setTimeout(tick, intervalMs);
      });
    };
    this.snapshotTimer = this.clock.setTimeout(tick, intervalMs);
  }

  private scheduleHwCheckpoints(intervalMs: number): void {
    const tick = () => {
      void this.topics
        .checkpointHighWatermarks()
        .catch((err: unknown) => this.logger.warn({ err }, 'high-watermark checkpoint failed'))
        .finally(() => {
          if (!this.closing) this.hwTimer = this.clock.setTimeout(tick, intervalMs);
        });
    };
    this.hwTimer = this.clock.setTimeout(tick, intervalMs);
  }

  private scheduleLagChecks(lagMsMax: number): void {
    // Checked a few times per window, so a follower leaves the ISR at most ~1.25 windows late.
    const every = Math.max(50, Math.floor(lagMsMax / 4));
    const tick = () => {
      for (const p of this.topics.localPartitions()) p.checkIsrLag(lagMsMax);
      if (!this.closing) this.lagTimer = this.clock.setTimeout(tick, every);
    };
    this.lagTimer = this.clock.setTimeout(tick, every);
  }
}
