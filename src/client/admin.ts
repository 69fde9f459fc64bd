/**
 * Cluster administration: topics (create, delete, list, describe with configs), consumer groups
 * (list, describe, committed offsets), partition offsets, and quotas (the QuotaAdmin of
 * ratelimit/: the cell keeps them, any broker answers). Per-item failures throw the first
 * error, with the topic, group or quota in its details.
 */
import { EdgeqError, type ErrorCode } from '../core/index.ts';
import { decodeAssignment, decodeSubscription } from '../group/index.ts';
import { parseQuota, type Quota, type QuotaAdmin } from '../../ratelimit/index.ts';
import { errorOf, type AlterQuotaOp, type AlterQuotaResult, type BrokerStatus as WireBrokerStatus, type GroupListing } from '../protocol/index.ts';
import { Cluster, type ClusterOptions } from './cluster.ts';
import type { TopicPartition, TopicPartitionOffset } from './group-member.ts';
import { withDeadline } from './hedged.ts';
import { listOffsets, type OffsetSpec } from './list-offsets.ts';
import { retry, type RetryOptions } from './retry.ts';

/** A topic to create. */
export interface NewTopic {
  name: string;
  partitions: number;
  replicationFactor?: number;
  /** Per-topic overrides, e.g. `{ 'retention.ms': '60000' }`. */
  config?: Record<string, string>;
}

/** A topic as `describeTopics` reports it. */
export interface TopicDescription {
  name: string;
  /** The topic's identity (KIP-516); '' from an older broker. */
  topicId: string;
  /** When it was created (wall-clock ms); 0 from an older broker. */
  createdAtMs: number;
  internal: boolean;
  replicationFactor: number;
  partitions: { partition: number; leaderId: number; leaderEpoch: number; replicas: number[]; isr: number[] }[];
  /** Effective configuration, defaults included. */
  config: Record<string, string>;
}

/**
 * One broker in `cellStatus`: the wire message as the brokers report it, plus, for a broker that
 * answered, the p99 of its fsyncs over the last few seconds (its own report).
 */
export type BrokerStatus = WireBrokerStatus & { fsyncP99Ms?: number };

/** One partition in `cellStatus`. */
export interface CellPartitionStatus {
  topic: string;
  partition: number;
  leaderId: number;
  leaderEpoch: number;
  isr: number[];
  replicas: number[];
  highWatermark: number;
  logEndOffset: number;
  logStartOffset: number;
}

/** The cell as `cellStatus` reports it. */
export interface CellStatus {
  cellId: string;
  brokers: BrokerStatus[];
  partitions: CellPartitionStatus[];
  /** Brokers in the metadata that did not answer. */
  unreachable: number[];
}

/** A group member as `describeGroups` reports it. */
export interface GroupMemberDescription {
  memberId: string;
  clientId: string;
  host: string;
  /** Decoded consumer subscription (empty for non-consumer groups). */
  topics: string[];
  assignment: TopicPartition[];
}

/** A group as `describeGroups` reports it. */
export interface GroupDescription {
  groupId: string;
  state: string;
  protocolType: string;
  protocolName: string;
  generationId: number;
  leaderId: string;
  members: GroupMemberDescription[];
}

/** What `readiness` found: partitions nobody leads, and leaders that did not answer in time. */
export interface CellReadiness {
  leaderless: TopicPartition[];
  silentLeaders: number[];
}

/** Options of an admin client. */
export interface AdminOptions {
  retry?: RetryOptions;
  /** Bound on one admin request. */
  requestTimeoutMs?: number;
}

function firstError(items: readonly { name: string; error?: { code: number; message: string; retriable: boolean } | null }[], ignore: ErrorCode[] = []): void {
  for (const item of items) {
    const err = errorOf(item.error, { topic: item.name });
    if (err && !ignore.includes(err.code)) throw err;
  }
}

/** The admin client; make one with `createAdmin` or `client.admin()`. */
export class Admin implements QuotaAdmin {
  private readonly retryOptions: RetryOptions;

  constructor(
    private readonly cluster: Cluster,
    options: AdminOptions = {},
    private readonly deps: { ownsCluster?: boolean } = {},
  ) {
    this.retryOptions = { clock: cluster.clock, ...options.retry };
  }

  /** Connects to the cluster (other calls connect when needed). */
  async connect(): Promise<void> {
    await this.cluster.connect();
  }

  /** Creates topics; TOPIC_ALREADY_EXISTS is ignored with `ifNotExists`. */
  async createTopics(topics: readonly NewTopic[], options: { validateOnly?: boolean; ifNotExists?: boolean } = {}): Promise<void> {
    const res = await retry(async () => {
      const conn = await this.cluster.anyConnection();
      return conn.request('CreateTopics', {
        topics: topics.map((t) => ({ name: t.name, partitions: t.partitions, replicationFactor: t.replicationFactor ?? 0, config: t.config ?? {} })), // 0: the broker's default
        validateOnly: options.validateOnly ?? false,
      });
    }, this.retryOptions);
    firstError(res.topics, options.ifNotExists ? ['TOPIC_ALREADY_EXISTS'] : []);
    this.cluster.markStale();
  }

  /** Deletes topics; UNKNOWN_TOPIC_OR_PARTITION is ignored with `ifExists`. */
  async deleteTopics(names: readonly string[], options: { ifExists?: boolean } = {}): Promise<void> {
    const res = await retry(async () => {
      const conn = await this.cluster.anyConnection();
      return conn.request('DeleteTopics', { names: [...names] });
    }, this.retryOptions);
    firstError(res.topics, options.ifExists ? ['UNKNOWN_TOPIC_OR_PARTITION'] : []);
    this.cluster.markStale();
  }

  /** Names of every topic (internal ones with `includeInternal`), sorted. */
  async listTopics(options: { includeInternal?: boolean } = {}): Promise<string[]> {
    const topics = await this.cluster.fetchAllTopics(options.includeInternal ?? false);
    return topics.map((t) => t.name).sort();
  }

  /** Partitions, leaders and effective configuration of topics (Metadata + DescribeConfigs). */
  async describeTopics(names: readonly string[]): Promise<TopicDescription[]> {
    const [meta, configs] = await Promise.all([
      this.cluster.fetchTopics(names),
      retry(() => this.cluster.requestAny('DescribeConfigs', { names: [...names] }), this.retryOptions),
    ]);
    firstError(configs.topics);
    for (const t of meta) if (t.error) throw t.error;
    return names.map((name) => {
      const m = meta.find((t) => t.name === name);
      const c = configs.topics.find((t) => t.name === name);
      if (!m || !c) throw new EdgeqError('UNKNOWN_TOPIC_OR_PARTITION', `topic "${name}" does not exist`, { details: { topic: name } });
      return {
        name,
        topicId: m.topicId,
        createdAtMs: m.createdAtMs,
        internal: m.internal || c.internal,
        replicationFactor: c.replicationFactor,
        partitions: m.partitions.filter((p) => p !== undefined).map((p) => ({
          partition: p.partition,
          leaderId: p.leaderId,
          leaderEpoch: p.leaderEpoch,
          replicas: p.replicas,
          isr: p.isr,
        })),
        config: { ...c.config },
      };
    });
  }

  /**
   * The cell's status: every broker (id, pid, address, alive) and every partition (leader, epoch,
   * ISR, high watermark, log end and start offsets, as its leader reports them). Each broker is
   * asked for what it knows of its own replicas, and the answers are merged; brokers that did not
   * answer are listed in `unreachable`.
   */
  async cellStatus(): Promise<CellStatus> {
    await this.cluster.ensureFresh();
    const brokers = this.cluster.brokers();
    const answers = await Promise.all(
      brokers.map(async (b) => {
        try {
          const conn = await this.cluster.connectionTo(b.id);
          return { id: b.id, res: await conn.request('CellStatus', {}, { timeoutMs: 5000 }) };
        } catch {
          return { id: b.id, res: null };
        }
      }),
    );
    const byBroker = new Map<number, BrokerStatus>();
    const parts = new Map<string, CellPartitionStatus>();
    const fsyncP99Ms = new Map<number, number>();
    let cellId = '';
    for (const { res } of answers) {
      if (!res) continue;
      cellId ||= res.cellId;
      fsyncP99Ms.set(res.brokerId, res.fsyncP99Ms ?? 0);
      for (const b of res.brokers) {
        const known = byBroker.get(b.id);
        // A plain copy: decoded protobuf messages keep defaults on their prototype, which JSON drops.
        if (!known || (!known.alive && b.alive)) byBroker.set(b.id, { id: b.id, pid: b.pid, host: b.host, port: b.port, region: b.region, alive: b.alive });
      }
      for (const r of res.replicas) {
        const key = `${r.topic}\u0000${r.partition}`;
        const entry: CellPartitionStatus = {
          topic: r.topic,
          partition: r.partition,
          leaderId: r.leaderId,
          leaderEpoch: r.leaderEpoch,
          isr: [...r.isr],
          replicas: [...r.replicas],
          highWatermark: r.highWatermark,
          logEndOffset: r.logEndOffset,
          logStartOffset: r.logStartOffset,
        };
        // The leader's own report is the authority on the marks; otherwise keep the newest epoch.
        const known = parts.get(key);
        if (!known || r.role === 'leader' || (known.leaderEpoch < r.leaderEpoch && known.leaderId !== res.brokerId)) parts.set(key, entry);
      }
    }
    for (const [id, p99] of fsyncP99Ms) {
      const b = byBroker.get(id);
      if (b) b.fsyncP99Ms = p99;
    }
    return {
      cellId,
      brokers: [...byBroker.values()].sort((a, b) => a.id - b.id),
      partitions: [...parts.values()].sort((a, b) => a.topic.localeCompare(b.topic) || a.partition - b.partition),
      unreachable: answers.filter((a) => !a.res).map((a) => a.id),
    };
  }

  /**
   * Whether the cell can serve every partition of every (non-internal) topic now: the metadata,
   * and one round trip to each broker that leads a partition, all within `timeoutMs`. A broker
   * that is named leader but does not answer (frozen, or its event loop stuck) is in
   * `silentLeaders`; a partition without a leader in `leaderless`. Fails with REQUEST_TIMED_OUT
   * (or the cell's error) when the metadata itself cannot be had in time.
   */
  async readiness(options: { timeoutMs: number }): Promise<CellReadiness> {
    const deadlineMs = this.cluster.clock.monotonicMs() + options.timeoutMs;
    const topics = await withDeadline(this.cluster.fetchAllTopics(false), options.timeoutMs, this.cluster.clock, () =>
      new EdgeqError('REQUEST_TIMED_OUT', `the cell gave no metadata within ${options.timeoutMs} ms`, { details: { timeoutMs: options.timeoutMs } }),
    );
    const leaderless: TopicPartition[] = [];
    const leaders = new Set<number>();
    for (const t of topics) {
      for (const p of t.partitions) {
        if (!p) continue;
        if (p.leaderId < 0) leaderless.push({ topic: t.name, partition: p.partition });
        else leaders.add(p.leaderId);
      }
    }
    const answers = await Promise.all(
      [...leaders].map(async (id) => {
        const leftMs = () => Math.max(1, deadlineMs - this.cluster.clock.monotonicMs());
        try {
          const conn = await this.cluster.connectionTo(id, { timeoutMs: leftMs() });
          await conn.request('Metadata', { topics: [], allTopics: false }, { timeoutMs: leftMs() });
          return null;
        } catch {
          return id;
        }
      }),
    );
    return { leaderless, silentLeaders: answers.filter((id): id is number => id !== null).sort((a, b) => a - b) };
  }

  /** Every consumer group of every broker. */
  async listGroups(): Promise<GroupListing[]> {
    await this.cluster.ensureFresh();
    const brokers = this.cluster.brokers();
    const lists = await Promise.all(
      brokers.map((b) =>
        retry(async () => {
          const conn = await this.cluster.connectionTo(b.id);
          const res = await conn.request('ListGroups', {});
          const err = errorOf(res.error);
          if (err) throw err;
          return res.groups;
        }, this.retryOptions),
      ),
    );
    const seen = new Map<string, GroupListing>();
    for (const g of lists.flat()) seen.set(g.groupId, { groupId: g.groupId, state: g.state, protocolType: g.protocolType });
    return [...seen.values()].sort((a, b) => (a.groupId < b.groupId ? -1 : a.groupId > b.groupId ? 1 : 0));
  }

  /** State, members and assignments of groups (asking each group's coordinator). */
  async describeGroups(groupIds: readonly string[]): Promise<GroupDescription[]> {
    return Promise.all(
      groupIds.map(async (groupId) => {
        const res = await retry(async () => {
          const conn = await this.cluster.coordinatorFor(groupId);
          return conn.request('DescribeGroups', { groupIds: [groupId] });
        }, this.retryOptions);
        const g = res.groups.find((x) => x.groupId === groupId);
        if (!g) throw new EdgeqError('GROUP_ID_NOT_FOUND', `group "${groupId}" was not described`, { details: { groupId } });
        const err = errorOf(g.error, { groupId });
        if (err) throw err;
        const consumer = g.protocolType === 'consumer';
        return {
          groupId,
          state: g.state,
          protocolType: g.protocolType,
          protocolName: g.protocolName,
          generationId: g.generationId,
          leaderId: g.leaderId,
          members: g.members.map((m) => ({
            memberId: m.memberId,
            clientId: m.clientId,
            host: m.host,
            topics: consumer && m.metadata.length > 0 ? decodeSubscription(m.metadata).topics : [],
            assignment:
              consumer && m.assignment.length > 0
                ? decodeAssignment(m.assignment).partitions.flatMap((tp) => tp.partitions.map((partition) => ({ topic: tp.topic, partition })))
                : [],
          })),
        };
      }),
    );
  }

  /**
   * Offsets of partitions: earliest, latest (the high watermark) or the first at/after a time.
   * With `timeoutMs`, fails with REQUEST_TIMED_OUT rather than wait longer for a silent leader.
   */
  async listOffsets(topic: string, options: { spec?: OffsetSpec; partitions?: readonly number[]; timeoutMs?: number } = {}): Promise<TopicPartitionOffset[]> {
    const fresh = this.cluster.ensureFresh([topic]);
    await (options.timeoutMs === undefined
      ? fresh
      : withDeadline(fresh, options.timeoutMs, this.cluster.clock, () => new EdgeqError('REQUEST_TIMED_OUT', `no metadata for "${topic}" within ${options.timeoutMs} ms`, { details: { topic, timeoutMs: options.timeoutMs } })));
    const count = this.cluster.partitionCount(topic);
    const partitions = options.partitions ?? Array.from({ length: count }, (_, i) => i);
    const found = await listOffsets(this.cluster, partitions.map((partition) => ({ topic, partition })), {
      spec: options.spec ?? 'latest',
      retry: this.retryOptions,
      ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    });
    return found.sort((a, b) => a.partition - b.partition);
  }

  /** Committed offsets of a group (all of them, or of `topics`); -1 where none. */
  async fetchGroupOffsets(groupId: string, options: { topics?: readonly string[] } = {}): Promise<(TopicPartitionOffset & { metadata: string })[]> {
    let request: { name: string; partitions: number[] }[] = [];
    if (options.topics) {
      await this.cluster.ensureFresh(options.topics);
      request = options.topics.map((name) => ({ name, partitions: Array.from({ length: this.cluster.partitionCount(name) }, (_, i) => i) }));
    }
    const res = await retry(async () => {
      const conn = await this.cluster.coordinatorFor(groupId);
      const r = await conn.request('OffsetFetch', { groupId, topics: request });
      const err = errorOf(r.error, { groupId });
      if (err) throw err;
      return r;
    }, this.retryOptions);
    const out: (TopicPartitionOffset & { metadata: string })[] = [];
    for (const t of res.topics) {
      for (const p of t.partitions) {
        const err = errorOf(p.error, { groupId, topic: t.name, partition: p.partition });
        if (err) throw err;
        out.push({ topic: t.name, partition: p.partition, offset: p.offset, metadata: p.metadata });
      }
    }
    return out.sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition));
  }

  /**
   * Commits offsets (with metadata) for a group without members, as Kafka's "simple consumer"
   * commits do (generation -1, no member id): the coordinator refuses them while the group has
   * members. The first partition refused throws.
   */
  async commitGroupOffsets(groupId: string, offsets: readonly (TopicPartitionOffset & { metadata?: string })[]): Promise<void> {
    if (offsets.length === 0) return;
    const byTopic = new Map<string, { partition: number; offset: number; metadata: string }[]>();
    for (const o of offsets) byTopic.set(o.topic, [...(byTopic.get(o.topic) ?? []), { partition: o.partition, offset: o.offset, metadata: o.metadata ?? '' }]);
    const res = await retry(async () => {
      const conn = await this.cluster.coordinatorFor(groupId);
      const r = await conn.request('OffsetCommit', { groupId, generationId: -1, memberId: '', topics: [...byTopic].map(([name, partitions]) => ({ name, partitions })) });
      const err = errorOf(r.error, { groupId });
      if (err) {
        if (err.code === 'COORDINATOR_NOT_AVAILABLE' || err.code === 'CONNECTION_CLOSED') this.cluster.invalidateCoordinator(groupId);
        throw err;
      }
      return r;
    }, this.retryOptions);
    for (const t of res.topics) {
      for (const p of t.partitions) {
        const err = errorOf(p.error, { groupId, topic: t.name, partition: p.partition });
        if (err) throw err;
      }
    }
  }

  /** Every quota the cell holds, sorted by (tenant, topic) (DescribeQuotas; any broker answers). */
  async listQuotas(): Promise<Quota[]> {
    const res = await retry(async () => {
      const r = await this.cluster.requestAny('DescribeQuotas', {});
      const err = errorOf(r.error);
      if (err) throw err;
      return r;
    }, this.retryOptions);
    // A broker's answer is input too: parsed as any quota (an invalid one fails loudly here).
    return res.quotas.map((e) => parseQuota(e.tenant, e.topic, { recordsPerSec: e.recordsPerSec, bytesPerSec: e.bytesPerSec, burstRecords: e.burstRecords, burstBytes: e.burstBytes, scope: e.scope || 'local' }));
  }

  /**
   * Sets or replaces the quota of (q.tenant, q.topic); resolved once the cell stored it. Bad
   * values: INVALID_ARGUMENT naming the field (details.field), and nothing changed.
   */
  async putQuota(q: Quota): Promise<void> {
    await this.alterQuotas([{ tenant: q.tenant, topic: q.topic, recordsPerSec: q.recordsPerSec, bytesPerSec: q.bytesPerSec, burstRecords: q.burstRecords, burstBytes: q.burstBytes, scope: q.scope }]);
  }

  /** Deletes the quota of (tenant, topic); false when there was none. */
  async deleteQuota(tenant: string, topic: string): Promise<boolean> {
    const [r] = await this.alterQuotas([{ tenant, topic, remove: true }]);
    return r?.existed === true;
  }

  /**
   * AlterQuotas: all the ops or none (the broker checks each as the HTTP API does). Retried on
   * retriable errors (the arbiter out of reach: nothing was written); a put is idempotent, a
   * remove retried after an unanswered attempt may report existed = false.
   */
  async alterQuotas(ops: readonly AlterQuotaOp[]): Promise<AlterQuotaResult[]> {
    return retry(async () => {
      const conn = await this.cluster.anyConnection();
      const res = await conn.request('AlterQuotas', { ops: [...ops] });
      // The op at fault first: the others of a refused request only say they were not applied.
      const failed = res.results.filter((r) => r.error && r.error.code !== 0);
      const cause = failed.find((r) => r.invalidField !== 'ops') ?? failed[0];
      const err = cause && errorOf(cause.error, { tenant: cause.tenant, topic: cause.topic, ...(cause.invalidField ? { field: cause.invalidField } : {}) });
      if (err) throw err;
      return res.results;
    }, this.retryOptions);
  }

  /** Closes the connections (when this admin owns them). */
  async close(): Promise<void> {
    if (this.deps.ownsCluster) await this.cluster.close();
  }
}

/** Creates an admin client with its own cluster connections. */
export function createAdmin(cluster: ClusterOptions, options: AdminOptions = {}): Admin {
  return new Admin(new Cluster(cluster), options, { ownsCluster: true });
}
