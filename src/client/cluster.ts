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
 *
 * A broker that accepts connections but answers nothing (a frozen process: SIGSTOP, a stuck event
 * loop) must not stall requests any broker could answer (metadata, bootstrap, coordinator lookup,
 * configs). Each attempt at one broker is bounded by `metadataAttemptTimeoutMs`; after
 * `metadataHedgeDelayMs` without an answer the next known broker is asked too (hedged), and the
 * first answer wins. A broker whose attempt ran out of time is remembered as slow and asked last
 * for `slowBrokerPenaltyMs`, or until it answers again. A caller that needs one broker (a leader)
 * bounds its own wait with `connectionTo(id, { timeoutMs })`.
 */
import { EdgeqError, silentLogger, systemClock, toEdgeqError, type Clock, type ErrorCode, type Logger, type TimerHandle } from '../core/index.ts';
import {
  Connection,
  errorOf,
  parseAddress,
  type ApiName,
  type BrokerAddress,
  type BrokerInfo,
  type ConnectionOptions,
  type MetadataResponse,
  type RequestOf,
  type ResponseOf,
} from '../protocol/index.ts';
import { hedge, withDeadline } from './hedged.ts';
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
  /** Bound on one attempt at one broker for metadata, bootstrap, coordinator and config lookups (connect included). */
  metadataAttemptTimeoutMs?: number;
  /** Wait for one broker's answer to such a lookup before also asking the next known broker. */
  metadataHedgeDelayMs?: number;
  /** How long a broker whose attempt ran out of time is asked last. */
  slowBrokerPenaltyMs?: number;
  /** Retry bounds for metadata and coordinator lookups. */
  retry?: RetryOptions;
  random?: () => number;
}

/** Defaults of `ClusterOptions`. */
/**
 * How long a send to a topic the client knows waits for a stale metadata refresh before it goes
 * on without it: a cell answers a refresh in milliseconds; one that cannot (its arbiter away)
 * must not hold sends past their delivery timeout.
 */
export const KNOWN_TOPIC_REFRESH_WAIT_MS = 500;

export const CLUSTER_DEFAULTS = {
  metadataMaxAgeMs: 300_000,
  reconnectBackoffMs: 50,
  reconnectBackoffMsMax: 2_000,
  // A live broker answers metadata from memory in milliseconds; 2 s is that with room for a
  // loaded machine, and a fifth of the 10 s connect timeout that a frozen broker used to cost.
  metadataAttemptTimeoutMs: 2_000,
  // Well above a healthy round trip (so a live broker is rarely asked twice), well below the
  // attempt bound: with one frozen broker ahead in the list, a lookup costs about 250 ms more.
  metadataHedgeDelayMs: 250,
  slowBrokerPenaltyMs: 30_000,
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
  /** The topic's identity (KIP-516): a topic deleted and created again has a new one; '' when unknown. */
  topicId: string;
  /** When it was created (wall-clock ms); 0 when unknown. */
  createdAtMs: number;
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
  // The topic was deleted and created again: its new id is in fresh metadata.
  'UNKNOWN_TOPIC_ID',
  'CONNECTION_CLOSED',
  'BROKER_NOT_AVAILABLE',
  'REQUEST_TIMED_OUT',
]);

/** True when `err` means the metadata cache may be stale (a leader moved, a broker went away). */
export function isStaleMetadataError(err: unknown): boolean {
  return err instanceof EdgeqError && STALE_METADATA_CODES.has(err.code);
}

interface AddressState {
  address: BrokerAddress;
  /** The connection, or the attempt to open it. */
  conn: Promise<Connection> | null;
  /** The connection once open (never a pending one: callers must not wait on a frozen handshake). */
  open: Connection | null;
  failures: number;
  nextAttemptMs: number;
  /** Until when this broker is asked last: its last attempt got no answer in time. */
  slowUntilMs: number;
}

const addressKey = (a: BrokerAddress): string => `${a.host}:${a.port}`;

/** The client's view of the cluster. */
export class Cluster {
  readonly clock: Clock;
  readonly logger: Logger;
  private readonly options: ClusterOptions;
  private readonly bootstrap: BrokerAddress[];
  private readonly metadataMaxAgeMs: number;
  private readonly metadataAttemptTimeoutMs: number;
  private readonly metadataHedgeDelayMs: number;
  private readonly slowBrokerPenaltyMs: number;
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
  /** Aborts connects under way when the cluster closes (a frozen broker's handshake would hold them for connectTimeoutMs). */
  private readonly aborter = new AbortController();
  clusterId = '';

  constructor(options: ClusterOptions) {
    if (options.brokers.length === 0) throw new EdgeqError('INVALID_CONFIG', 'brokers: at least one bootstrap address is needed');
    this.options = options;
    this.bootstrap = options.brokers.map(parseAddress);
    this.clock = options.clock ?? systemClock;
    this.logger = (options.logger ?? silentLogger).child({ component: 'cluster' });
    this.metadataMaxAgeMs = options.metadataMaxAgeMs ?? CLUSTER_DEFAULTS.metadataMaxAgeMs;
    this.metadataAttemptTimeoutMs = options.metadataAttemptTimeoutMs ?? CLUSTER_DEFAULTS.metadataAttemptTimeoutMs;
    this.metadataHedgeDelayMs = options.metadataHedgeDelayMs ?? CLUSTER_DEFAULTS.metadataHedgeDelayMs;
    this.slowBrokerPenaltyMs = options.slowBrokerPenaltyMs ?? CLUSTER_DEFAULTS.slowBrokerPenaltyMs;
    this.random = options.random ?? Math.random;
    for (const [key, v] of Object.entries({ metadataAttemptTimeoutMs: this.metadataAttemptTimeoutMs, metadataHedgeDelayMs: this.metadataHedgeDelayMs, slowBrokerPenaltyMs: this.slowBrokerPenaltyMs })) {
      if (!(Number.isSafeInteger(v) && v > 0)) throw new EdgeqError('INVALID_CONFIG', `${key} must be a positive integer, got ${v}`, { details: { key } });
    }
    // A hedge that starts after the attempt it hedges has given up is no hedge.
    if (this.metadataHedgeDelayMs >= this.metadataAttemptTimeoutMs) {
      throw new EdgeqError('INVALID_CONFIG', `metadataHedgeDelayMs (${this.metadataHedgeDelayMs}) must be below metadataAttemptTimeoutMs (${this.metadataAttemptTimeoutMs})`, {
        details: { key: 'metadataHedgeDelayMs' },
      });
    }
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
    if ((this.topics.get(topic)?.partitions.length ?? 0) > 0) {
      // Known: a stale cache is refreshed first (right after a topic is created, that refresh is
      // what gives its leader the moment to apply it), but for KNOWN_TOPIC_REFRESH_WAIT_MS at
      // most; past it the refresh goes on behind the send. Waiting without a bound let one
      // metadata request a cell could not answer (its arbiter away) hold every send past its
      // produce timeout.
      const refresh = this.ensureFresh([topic]).catch((err: unknown) => this.logger.debug({ err: toEdgeqError(err).code }, 'metadata refresh before a send failed'));
      // Past the bound the send goes on; the refresh is not cancelled.
      await withDeadline(refresh, KNOWN_TOPIC_REFRESH_WAIT_MS, this.clock, () => new EdgeqError('REQUEST_TIMED_OUT', 'metadata refresh still out')).catch(() => undefined);
      return;
    }
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
        const res = await retry(() => this.requestAny('Metadata', { topics: [...this.tracked], allTopics: false }), { clock: this.clock, random: this.random, ...this.options.retry });
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
    const res = await retry(() => this.requestAny('Metadata', { topics: [], allTopics: true, includeInternal }), { clock: this.clock, random: this.random, ...this.options.retry });
    this.applyMetadata(res, false);
    return res.topics.map(toTopicInfo);
  }

  /** Metadata of the named topics, asked of the cluster now (admin describe). */
  async fetchTopics(names: readonly string[]): Promise<TopicInfo[]> {
    const res = await retry(() => this.requestAny('Metadata', { topics: [...names], allTopics: false }), { clock: this.clock, random: this.random, ...this.options.retry });
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

  /** The cached id of a topic ('' when unknown, or from a broker that gives none). */
  topicIdOf(name: string): string {
    return this.topics.get(name)?.topicId ?? '';
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
    // Either answer comes from the cache, and a cache taken during an election (no leader yet) or
    // before a partition existed is wrong soon after: the next ensureFresh asks again, whoever
    // calls it. Left to its maximum age, one caller's cache kept two regions' exchanges from an
    // origin partition for minutes after the origin had elected its leader.
    if (!p) {
      const err = new EdgeqError('UNKNOWN_TOPIC_OR_PARTITION', `partition ${topic}/${partition} does not exist`, { details: { topic, partition } });
      this.markStale(err);
      throw err;
    }
    if (p.leaderId < 0 || !this.brokersById.has(p.leaderId)) {
      const err = new EdgeqError('LEADER_NOT_AVAILABLE', `partition ${topic}/${partition} has no known leader`, { details: { topic, partition } });
      this.markStale(err);
      throw err;
    }
    return p;
  }

  /** Every broker in the last metadata. */
  brokers(): BrokerInfo[] {
    return [...this.brokersById.values()];
  }

  /**
   * The connection to a broker by id, opened (with backoff) when needed. With `timeoutMs`, the
   * caller waits at most that long (REQUEST_TIMED_OUT): a frozen broker's handshake never ends.
   */
  async connectionTo(brokerId: number, options: { timeoutMs?: number } = {}): Promise<Connection> {
    const b = this.brokersById.get(brokerId);
    if (!b) throw new EdgeqError('BROKER_NOT_AVAILABLE', `broker ${brokerId} is not in the metadata`, { details: { brokerId } });
    const address = { host: b.host, port: b.port };
    if (options.timeoutMs === undefined) return this.connectionAt(address);
    return this.connectionWithin(address, options.timeoutMs);
  }

  /**
   * An open connection to a broker not known to be slow, else the first connection a hedged
   * attempt over the known brokers and bootstrap addresses opens.
   */
  async anyConnection(): Promise<Connection> {
    const now = this.clock.monotonicMs();
    for (const state of this.addresses.values()) {
      if (state.open && !state.open.closed && state.slowUntilMs <= now) return state.open;
    }
    return this.askAnyBroker('a connection', async (conn) => conn);
  }

  /**
   * Sends a request any broker can answer (Metadata, FindCoordinator, DescribeConfigs: reads, so
   * asking two brokers is harmless) to the first broker that answers, hedged (see the file comment).
   */
  async requestAny<N extends ApiName>(name: N, body: RequestOf<N>): Promise<ResponseOf<N>> {
    return this.askAnyBroker(name, (conn, timeoutMs) => conn.request(name, body, { timeoutMs }));
  }

  /**
   * Candidates for a request any broker can answer: open connections to brokers not known to be
   * slow first, in the order they were opened (the broker `anyConnection` gives, so a describe
   * right after a create asks the broker that created), then the other known and bootstrap
   * addresses by when their backoff ends, slow brokers last.
   */
  private candidates(): BrokerAddress[] {
    const now = this.clock.monotonicMs();
    const open = [...this.addresses.values()].filter((s) => s.open && !s.open.closed && s.slowUntilMs <= now).map((s) => s.address);
    const seen = new Set<string>(open.map(addressKey));
    const rest = [...this.brokers().map((b) => ({ host: b.host, port: b.port })), ...this.bootstrap].filter((a) => !seen.has(addressKey(a)) && seen.add(addressKey(a)));
    const slow = (a: BrokerAddress): number => (this.stateOf(a).slowUntilMs > now ? 1 : 0);
    // Stable sort: within each group, the address whose backoff ends first, then the given order.
    rest.sort((a, b) => slow(a) - slow(b) || this.stateOf(a).nextAttemptMs - this.stateOf(b).nextAttemptMs);
    return [...open, ...rest];
  }

  private askAnyBroker<T>(what: string, ask: (conn: Connection, timeoutMs: number) => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new EdgeqError('CONNECTION_CLOSED', 'the client is closed'));
    return hedge(this.candidates(), (a) => this.attemptAt(a, what, ask), { hedgeDelayMs: this.metadataHedgeDelayMs, clock: this.clock, what, label: addressKey });
  }

  /** One bounded attempt at one broker; a broker that stays silent through it is remembered as slow. */
  private async attemptAt<T>(address: BrokerAddress, what: string, ask: (conn: Connection, timeoutMs: number) => Promise<T>): Promise<T> {
    const state = this.stateOf(address);
    const deadlineMs = this.clock.monotonicMs() + this.metadataAttemptTimeoutMs;
    try {
      const conn = await this.connectionWithin(address, this.metadataAttemptTimeoutMs);
      const value = await ask(conn, Math.max(1, deadlineMs - this.clock.monotonicMs()));
      state.slowUntilMs = 0;
      return value;
    } catch (err) {
      const e = toEdgeqError(err);
      if (e.code === 'REQUEST_TIMED_OUT') {
        state.slowUntilMs = this.clock.monotonicMs() + this.slowBrokerPenaltyMs;
        this.logger.info({ address: addressKey(address), what, penaltyMs: this.slowBrokerPenaltyMs }, 'broker did not answer in time; asked last for a while');
      }
      throw e;
    }
  }

  /** `connectionAt`, but the caller stops waiting after `timeoutMs` (the connect itself goes on, bounded by connectTimeoutMs). */
  private connectionWithin(address: BrokerAddress, timeoutMs: number): Promise<Connection> {
    const state = this.stateOf(address);
    if (state.open && !state.open.closed) return Promise.resolve(state.open);
    return withDeadline(this.connectionAt(address), timeoutMs, this.clock, () =>
      new EdgeqError('REQUEST_TIMED_OUT', `connecting to ${addressKey(address)} took over ${timeoutMs} ms`, { details: { broker: addressKey(address), timeoutMs } }),
    );
  }

  private stateOf(a: BrokerAddress): AddressState {
    const key = addressKey(a);
    let s = this.addresses.get(key);
    if (!s) {
      s = { address: { host: a.host, port: a.port }, conn: null, open: null, failures: 0, nextAttemptMs: 0, slowUntilMs: 0 };
      this.addresses.set(key, s);
    }
    return s;
  }

  /** The connection to an address, opened when needed after that address's backoff. */
  async connectionAt(address: BrokerAddress): Promise<Connection> {
    if (this.closed) throw new EdgeqError('CONNECTION_CLOSED', 'the client is closed');
    const state = this.stateOf(address);
    if (state.open && !state.open.closed) return state.open;
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
      const conn = await Connection.connect(address, { ...this.options, clock: this.clock, logger: this.logger, signal: this.aborter.signal });
      state.failures = 0;
      state.nextAttemptMs = 0;
      if (this.closed) {
        conn.close();
        throw new EdgeqError('CONNECTION_CLOSED', 'the client is closed');
      }
      state.open = conn;
      if (conn.clusterId) this.clusterId = conn.clusterId;
      conn.onClose((err) => {
        if (state.open === conn) state.open = null;
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
      const res = await this.requestAny('FindCoordinator', { key: groupId });
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

  /**
   * Closes every connection and stops the refresh timer. Connects under way are aborted, not
   * waited for (one to a frozen broker would take connectTimeoutMs); one that finishes anyway
   * closes itself (see `openAfterBackoff`).
   */
  async close(): Promise<void> {
    this.closed = true;
    this.timer?.cancel();
    this.timer = null;
    this.aborter.abort();
    for (const s of this.addresses.values()) s.open?.close();
    this.addresses.clear();
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
  return { name: t.name, topicId: t.topicId ?? '', createdAtMs: Number(t.createdAtMs ?? 0), internal: t.internal, partitions, error: errorOf(t.error, { topic: t.name }) };
}
