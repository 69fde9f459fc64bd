/**
 * What a client knows about the cluster: the bootstrap addresses, a metadata cache (topic →
 * partitions → leader id and epoch; broker id → address), one connection per broker, and the
 * group coordinators it found.
 *
 * Metadata is refreshed on demand (a topic it has not seen), periodically (`metadataMaxAgeMs`),
 * and whenever a caller reports an error that means the cache is wrong (`markStale`: NOT_LEADER,
 * FENCED_LEADER_EPOCH, LEADER_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION, lost connections).
 * Concurrent refreshes share one request. Connections are keyed by address; a failed connect
 * waits an exponential, jittered backoff before the next try to the same address, so a restarting
 * broker is not hammered.
 */
import { EdgeqError, silentLogger, systemClock, toEdgeqError, type Clock, type ErrorCode, type Logger, type TimerHandle } from '../core/index.ts';
import { Connection, errorOf, parseAddress, type BrokerAddress, type BrokerInfo, type ConnectionOptions, type MetadataResponse } from '../protocol/index.ts';
import { backoffDelayMs, retry, sleep, type RetryOptions } from './retry.ts';

/** Options of a cluster view. */
export interface ClusterOptions extends ConnectionOptions {
  /** Bootstrap addresses, `host:port`; any one reachable broker is enough. */
  brokers: readonly string[];
  /** Metadata older than this is refreshed even without errors. */
  metadataMaxAgeMs?: number;
  /** Base and cap of the backoff between connects to the same address. */
  reconnectBackoffMs?: number;
  reconnectBackoffMsMax?: number;
  /** Retry bounds for metadata and coordinator lookups. */
  retry?: RetryOptions;
  random?: () => number;
}

/** Defaults of `ClusterOptions`. */
export const CLUSTER_DEFAULTS = {
  metadataMaxAgeMs: 300_000,
  reconnectBackoffMs: 50,
  reconnectBackoffMsMax: 2_000,
} as const;

/** One partition as the metadata describes it. */
export interface PartitionInfo {
  partition: number;
  /** -1 while no leader is known. */
  leaderId: number;
  leaderEpoch: number;
  replicas: number[];
  isr: number[];
  error: EdgeqError | null;
}

/** One topic as the metadata describes it. */
export interface TopicInfo {
  name: string;
  internal: boolean;
  /** Indexed by partition number. */
  partitions: PartitionInfo[];
  error: EdgeqError | null;
}

/** Error codes after which a client's metadata may be wrong. */
const STALE_METADATA_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'NOT_LEADER',
  // A leader cut off from its arbiter stops writing; another broker may lead by now.
  'ARBITER_UNAVAILABLE',
  'FENCED_LEADER_EPOCH',
  'LEADER_NOT_AVAILABLE',
  'UNKNOWN_TOPIC_OR_PARTITION',
  'CONNECTION_CLOSED',
  'BROKER_NOT_AVAILABLE',
  'REQUEST_TIMED_OUT',
]);

/** True when `err` means the metadata cache may be stale (a leader moved, a broker went away). */
export function isStaleMetadataError(err: unknown): boolean {
  return err instanceof EdgeqError && STALE_METADATA_CODES.has(err.code);
}

interface AddressState {
  conn: Promise<Connection> | null;
  failures: number;
  nextAttemptMs: number;
}

const addressKey = (a: BrokerAddress): string => `${a.host}:${a.port}`;

/** The client's view of the cluster. */
export class Cluster {
  readonly clock: Clock;
  readonly logger: Logger;
  private readonly options: ClusterOptions;
  private readonly bootstrap: BrokerAddress[];
  private readonly metadataMaxAgeMs: number;
  private readonly random: () => number;
  private readonly addresses = new Map<string, AddressState>();
  private readonly brokersById = new Map<number, BrokerInfo>();
  private readonly topics = new Map<string, TopicInfo>();
  /** Topics whose metadata every refresh asks for. */
  private readonly tracked = new Set<string>();
  private readonly coordinators = new Map<string, BrokerAddress>();
  private refreshing: Promise<void> | null = null;
  private refreshedAtMs = -Infinity;
  private stale = true;
  private timer: TimerHandle | null = null;
  private closed = false;
  clusterId = '';

  constructor(options: ClusterOptions) {
    if (options.brokers.length === 0) throw new EdgeqError('INVALID_CONFIG', 'brokers: at least one bootstrap address is needed');
    this.options = options;
    this.bootstrap = options.brokers.map(parseAddress);
    this.clock = options.clock ?? systemClock;
    this.logger = (options.logger ?? silentLogger).child({ component: 'cluster' });
    this.metadataMaxAgeMs = options.metadataMaxAgeMs ?? CLUSTER_DEFAULTS.metadataMaxAgeMs;
    this.random = options.random ?? Math.random;
  }

  /** Connects to a bootstrap broker and loads metadata; starts the periodic refresh. */
  async connect(): Promise<void> {
    await this.refreshMetadata();
    this.schedulePeriodicRefresh();
  }

  private schedulePeriodicRefresh(): void {
    if (this.closed || this.timer) return;
    this.timer = this.clock.setTimeout(() => {
      this.timer = null;
      if (this.closed) return;
      if (this.clock.monotonicMs() - this.refreshedAtMs >= this.metadataMaxAgeMs) {
        this.refreshMetadata().catch((err) => this.logger.warn({ err }, 'periodic metadata refresh failed'));
      }
      this.schedulePeriodicRefresh();
    }, this.metadataMaxAgeMs);
  }

  /** Adds topics that every metadata refresh asks for. */
  track(topics: Iterable<string>): void {
    for (const t of topics) this.tracked.add(t);
  }

  /** Marks the cache stale: the next `ensureFresh` asks the cluster again. */
  markStale(reason?: unknown): void {
    if (!this.stale && reason !== undefined) this.logger.debug({ reason: toEdgeqError(reason).code }, 'metadata marked stale');
    this.stale = true;
  }

  /** Refreshes metadata if it is stale, too old, or lacks one of `topics`. */
  async ensureFresh(topics: readonly string[] = []): Promise<void> {
    this.track(topics);
    const missing = topics.some((t) => !this.topics.has(t));
    const old = this.clock.monotonicMs() - this.refreshedAtMs >= this.metadataMaxAgeMs;
    if (this.stale || missing || old) await this.refreshMetadata();
  }

  /**
   * Waits until the cluster's metadata names `topic`, refreshing with backoff for up to `waitMs`.
   * A topic just created is announced by the arbiter to every broker of a cell within
   * milliseconds, but not atomically: a broker may still answer "unknown" for a moment (Kafka's
   * producer waits for metadata the same way).
   */
  async waitForTopic(topic: string, waitMs: number): Promise<void> {
    await this.ensureFresh([topic]);
    const deadline = this.clock.monotonicMs() + waitMs;
    let pauseMs = 25;
    while (!((this.topics.get(topic)?.partitions.length ?? 0) > 0) && this.clock.monotonicMs() < deadline) {
      await new Promise<void>((r) => this.clock.setTimeout(r, pauseMs));
      pauseMs = Math.min(pauseMs * 2, 500);
      await this.refreshMetadata();
    }
  }

  /** Asks a broker for the metadata of every tracked topic (concurrent calls share one request). */
  async refreshMetadata(): Promise<void> {
    if (this.refreshing) return this.refreshing;
    this.refreshing = (async () => {
      try {
        // Cleared first: an error reported while the request is out marks it stale again.
        this.stale = false;
        const res = await retry(async () => {
          const conn = await this.anyConnection();
          return conn.request('Metadata', { topics: [...this.tracked], allTopics: false });
        }, { clock: this.clock, random: this.random, ...this.options.retry });
        this.applyMetadata(res, true);
      } catch (err) {
        this.stale = true;
        throw err;
      } finally {
        this.refreshing = null;
      }
    })();
    return this.refreshing;
  }

  /** Asks for the metadata of all topics (admin listings); does not change what is tracked. */
  async fetchAllTopics(includeInternal = false): Promise<TopicInfo[]> {
    const res = await retry(async () => {
      const conn = await this.anyConnection();
      return conn.request('Metadata', { topics: [], allTopics: true, includeInternal });
    }, { clock: this.clock, random: this.random, ...this.options.retry });
    this.applyMetadata(res, false);
    return res.topics.map(toTopicInfo);
  }

  /** Metadata of the named topics, asked of the cluster now (admin describe). */
  async fetchTopics(names: readonly string[]): Promise<TopicInfo[]> {
    const res = await retry(async () => {
      const conn = await this.anyConnection();
      return conn.request('Metadata', { topics: [...names], allTopics: false });
    }, { clock: this.clock, random: this.random, ...this.options.retry });
    this.applyMetadata(res, false);
    return res.topics.map(toTopicInfo);
  }

  private applyMetadata(res: MetadataResponse, complete: boolean): void {
    if (res.clusterId) this.clusterId = res.clusterId;
    this.brokersById.clear();
    for (const b of res.brokers) this.brokersById.set(b.id, b);
    for (const t of res.topics) {
      const info = toTopicInfo(t);
      if (info.error?.code === 'UNKNOWN_TOPIC_OR_PARTITION') this.topics.delete(t.name);
      else this.topics.set(t.name, info);
    }
    if (complete) this.refreshedAtMs = this.clock.monotonicMs();
  }

  /** The cached metadata of a topic, or undefined when it is not known (to exist). */
  topic(name: string): TopicInfo | undefined {
    return this.topics.get(name);
  }

  /** The cached partition count of a topic; UNKNOWN_TOPIC_OR_PARTITION when the topic is not known. */
  partitionCount(topic: string): number {
    const t = this.topics.get(topic);
    if (!t || t.partitions.length === 0) {
      throw new EdgeqError('UNKNOWN_TOPIC_OR_PARTITION', `topic "${topic}" does not exist`, { details: { topic } });
    }
    return t.partitions.length;
  }

  /** The cached leader of a partition; throws UNKNOWN_TOPIC_OR_PARTITION or LEADER_NOT_AVAILABLE. */
  leaderOf(topic: string, partition: number): PartitionInfo {
    const p = this.topics.get(topic)?.partitions[partition];
    if (!p) {
      throw new EdgeqError('UNKNOWN_TOPIC_OR_PARTITION', `partition ${topic}/${partition} does not exist`, { details: { topic, partition } });
    }
    if (p.leaderId < 0 || !this.brokersById.has(p.leaderId)) {
      throw new EdgeqError('LEADER_NOT_AVAILABLE', `partition ${topic}/${partition} has no known leader`, { details: { topic, partition } });
    }
    return p;
  }

  /** Every broker in the last metadata. */
  brokers(): BrokerInfo[] {
    return [...this.brokersById.values()];
  }

  /** The connection to a broker by id, opened (with backoff) when needed. */
  async connectionTo(brokerId: number): Promise<Connection> {
    const b = this.brokersById.get(brokerId);
    if (!b) throw new EdgeqError('BROKER_NOT_AVAILABLE', `broker ${brokerId} is not in the metadata`, { details: { brokerId } });
    return this.connectionAt({ host: b.host, port: b.port });
  }

  /** Any open connection, else a new one to a known broker or a bootstrap address. */
  async anyConnection(): Promise<Connection> {
    for (const state of this.addresses.values()) {
      if (!state.conn) continue;
      const conn = await state.conn.catch(() => null);
      if (conn && !conn.closed) return conn;
    }
    const candidates = [...this.brokers().map((b) => ({ host: b.host, port: b.port })), ...this.bootstrap];
    // Try the address whose backoff ends first, so one dead bootstrap does not stall the others.
    const seen = new Set<string>();
    const unique = candidates.filter((a) => !seen.has(addressKey(a)) && seen.add(addressKey(a)));
    unique.sort((a, b) => this.stateOf(a).nextAttemptMs - this.stateOf(b).nextAttemptMs);
    let last: unknown = null;
    for (const a of unique) {
      try {
        return await this.connectionAt(a);
      } catch (err) {
        last = err;
      }
    }
    throw new EdgeqError('BROKER_NOT_AVAILABLE', `no broker reachable (tried ${unique.map(addressKey).join(', ')})`, { cause: last });
  }

  private stateOf(a: BrokerAddress): AddressState {
    const key = addressKey(a);
    let s = this.addresses.get(key);
    if (!s) {
      s = { conn: null, failures: 0, nextAttemptMs: 0 };
      this.addresses.set(key, s);
    }
    return s;
  }

  /** The connection to an address, opened when needed after that address's backoff. */
  async connectionAt(address: BrokerAddress): Promise<Connection> {
    if (this.closed) throw new EdgeqError('CONNECTION_CLOSED', 'the client is closed');
    const state = this.stateOf(address);
    for (;;) {
      const current = state.conn;
      if (!current) break;
      const conn = await current.catch(() => null);
      if (conn && !conn.closed) return conn;
      // Someone else replaced the dead connection while we looked: use theirs.
      if (state.conn === current) break;
    }
    const opening = this.open(address, state);
    state.conn = opening;
    return opening;
  }

  private open(address: BrokerAddress, state: AddressState): Promise<Connection> {
    const attempt: Promise<Connection> = this.openAfterBackoff(address, state, () => attempt);
    return attempt;
  }

  private async openAfterBackoff(address: BrokerAddress, state: AddressState, self: () => Promise<Connection>): Promise<Connection> {
    const waitMs = state.nextAttemptMs - this.clock.monotonicMs();
    if (waitMs > 0) await sleep(waitMs, this.clock);
    if (this.closed) throw new EdgeqError('CONNECTION_CLOSED', 'the client is closed');
    try {
      const conn = await Connection.connect(address, { ...this.options, clock: this.clock, logger: this.logger });
      state.failures = 0;
      state.nextAttemptMs = 0;
      if (conn.clusterId) this.clusterId = conn.clusterId;
      conn.onClose((err) => {
        if (this.closed) return;
        this.logger.debug({ address: addressKey(address), err: err.message }, 'connection lost');
        this.markStale(err);
        for (const [group, a] of this.coordinators) if (addressKey(a) === addressKey(address)) this.coordinators.delete(group);
      });
      return conn;
    } catch (err) {
      state.failures++;
      const delay = backoffDelayMs(state.failures - 1, {
        retryBackoffMs: this.options.reconnectBackoffMs ?? CLUSTER_DEFAULTS.reconnectBackoffMs,
        retryBackoffMsMax: this.options.reconnectBackoffMsMax ?? CLUSTER_DEFAULTS.reconnectBackoffMsMax,
        random: this.random,
      });
      state.nextAttemptMs = this.clock.monotonicMs() + delay;
      this.logger.debug({ address: addressKey(address), failures: state.failures, backoffMs: delay, err: toEdgeqError(err).code }, 'connect failed');
      if (state.conn === self()) state.conn = null;
      this.markStale(err);
      throw err;
    }
  }

  /** The coordinator of a consumer group (FindCoordinator, cached until it fails). */
  async coordinatorFor(groupId: string): Promise<Connection> {
    const known = this.coordinators.get(groupId);
    if (known) return this.connectionAt(known);
    const address = await retry(async () => {
      const conn = await this.anyConnection();
      const res = await conn.request('FindCoordinator', { key: groupId });
      const err = errorOf(res.error, { groupId });
      if (err) throw err;
      if (!res.coordinator) throw new EdgeqError('COORDINATOR_NOT_AVAILABLE', `no coordinator for group "${groupId}"`, { details: { groupId } });
      return { host: res.coordinator.host, port: res.coordinator.port };
    }, { clock: this.clock, random: this.random, ...this.options.retry });
    this.coordinators.set(groupId, address);
    return this.connectionAt(address);
  }

  /** Forgets the coordinator of a group (after it failed or moved). */
  invalidateCoordinator(groupId: string): void {
    this.coordinators.delete(groupId);
  }

  /** Closes every connection and stops the refresh timer. */
  async close(): Promise<void> {
    this.closed = true;
    this.timer?.cancel();
    this.timer = null;
    const conns = [...this.addresses.values()].map((s) => s.conn).filter((c): c is Promise<Connection> => c !== null);
    this.addresses.clear();
    await Promise.all(conns.map((c) => c.then((conn) => conn.close(), () => undefined)));
  }
}

function toTopicInfo(t: MetadataResponse['topics'][number]): TopicInfo {
  const partitions: PartitionInfo[] = [];
  for (const p of t.partitions) {
    partitions[p.partition] = {
      partition: p.partition,
      leaderId: p.leaderId,
      leaderEpoch: p.leaderEpoch,
      replicas: [...p.replicas],
      isr: [...p.isr],
      error: errorOf(p.error, { topic: t.name, partition: p.partition }),
    };
  }
  return { name: t.name, internal: t.internal, partitions, error: errorOf(t.error, { topic: t.name }) };
}
