/**
 * The API handlers of one broker: each turns a decoded request into a response using the topic
 * manager, the producer-id allocator and the group coordinator. Per-topic and per-partition
 * failures are answered inside the response; only whole-request failures throw.
 */
import { EdgeqError, type Clock } from '../core/index.ts';
import type { BrokerMetrics } from '../metrics/index.ts';
import type { GroupCoordinator } from '../group/index.ts';
import {
  Acks,
  EARLIEST_TIMESTAMP,
  LATEST_TIMESTAMP,
  supportedVersions,
  wireError,
  type BrokerInfo,
  type ListOffsetsPartitionResult,
  type TopicMetadata,
} from '../protocol/index.ts';
import { handleFetch, type FetchLimits } from './fetch-handler.ts';
import { FetchSessions } from './fetch-sessions.ts';
import { handleProduce, type ProduceLimits } from './produce-handler.ts';
import type { ClientQuotas } from './client-quotas.ts';
import type { CellController, ProducerIdSource } from './controller.ts';
import type { Handlers } from './request-router.ts';
import type { TopicManager, TopicView } from './topic-manager.ts';
import { INGRESS_HISTORY_TOPIC, isInternalTopic } from './topic-name.ts';
import { AUTH_MECHANISM_API_KEY, FRAME_BYTES_MAX_DEFAULT, GATEWAY_CLIENT_ID, internalClientId, isInternalClientId } from '../protocol/index.ts';
import type { BrokerAuth } from './broker-auth.ts';
import type { RequestContext } from './request-router.ts';

/** What the handlers work with. */
export interface HandlerDeps {
  self: BrokerInfo;
  clusterId: string;
  topics: TopicManager;
  /** The group coordinator while this broker hosts it (the leader of `__consumer_offsets`). */
  groups: () => GroupCoordinator | null;
  /** The broker that coordinates groups now, if known. */
  coordinator: () => BrokerInfo | null;
  producerIds: ProducerIdSource;
  /** The cell, when this broker is part of one. */
  cell: CellController | null;
  pid: number;
  clock: Clock;
  fetchLimits: FetchLimits;
  produceLimits: ProduceLimits;
  frameBytesMax?: number;
  /** Produce and fetch figures go here when set. */
  metrics?: BrokerMetrics;
  /** Quotas of binary-protocol clients (KIP-219); absent: none kept, nothing limited. */
  quotas?: ClientQuotas;
  /** Authentication of binary clients (API keys, certificate identities); absent or null: auth off. */
  auth?: BrokerAuth | null;
}

/** Builds the handler table. */
export function createHandlers(d: HandlerDeps): Handlers {
  // The broker's origin-fetch sessions (a replicator's pipelined long polls).
  const fetchSessions = new FetchSessions();
  const topicMetadata = (view: TopicView): TopicMetadata => ({
    name: view.record.name,
    topicId: view.record.id,
    createdAtMs: view.record.createdAtMs,
    internal: view.record.internal,
    partitions: view.partitions.map((p, index) => {
      const st = d.cell?.partitionState(view.record.name, index);
      if (st) {
        // A leader whose broker is gone (no live ISR member could take over) is no leader at all.
        const alive = d.cell!.brokers().some((b) => b.id === st.leader);
        return { partition: index, leaderId: alive ? st.leader : -1, leaderEpoch: st.leaderEpoch, replicas: st.replicas, isr: st.isr };
      }
      return { partition: index, leaderId: d.self.id, leaderEpoch: p?.leaderEpoch ?? 0, replicas: [d.self.id], isr: [d.self.id] };
    }),
  });
  const groupsOrError = (): GroupCoordinator => {
    const g = d.groups();
    if (!g) throw notCoordinatorError();
    return g;
  };
  const notCoordinatorError = () => new EdgeqError('COORDINATOR_NOT_AVAILABLE', `broker ${d.self.id} does not coordinate groups now; ask FindCoordinator again`);
  const notCoordinator = () => wireError(notCoordinatorError());
  const wireFail = <T extends object>(make: (e: ReturnType<typeof wireError>) => T) => (err: unknown): T => make(wireError(err));

  return {
    ApiVersions: async (req, ctx) => {
      if (req.clientId) ctx.clientId = req.clientId.slice(0, 256);
      // A tenant's certificate cannot pass for one of the cell's own clients by its client id.
      if (ctx.principal?.role === 'tenant' && isInternalClientId(ctx.clientId)) ctx.clientId = ctx.principal.tenant;
      return {
        apis: supportedVersions(),
        brokerId: d.self.id,
        clusterId: d.clusterId,
        frameBytesMax: d.frameBytesMax ?? FRAME_BYTES_MAX_DEFAULT,
      };
    },

    Metadata: async (req, ctx) => {
      const names = req.topics ?? [];
      let topics: TopicMetadata[];
      if (names.length === 0 && req.allTopics !== false) {
        // A tenant lists the topics its grants name (the gateway's rule); others see every topic.
        const p = ctx.principal;
        const views = d.topics.list({ includeInternal: req.includeInternal === true });
        topics = (p && p.role === 'tenant' ? views.filter((v) => p.sees(v.record.name)) : views).map(topicMetadata);
      } else {
        topics = names.map((name) => {
          const view = d.topics.get(name);
          if (!view) {
            return {
              name,
              internal: isInternalTopic(name),
              partitions: [],
              error: wireError(new EdgeqError('UNKNOWN_TOPIC_OR_PARTITION', `topic ${name} does not exist`, { details: { topic: name } })),
            };
          }
          return topicMetadata(view);
        });
      }
      return { brokers: d.cell ? d.cell.brokers() : [d.self], controllerId: d.self.id, topics, clusterId: d.clusterId };
    },

    Produce: async (req, ctx) => {
      for (const t of req.topics) {
        if (isInternalTopic(t.name) && !gatewayOwns(t.name, ctx.clientId)) {
          throw new EdgeqError('INVALID_TOPIC', `topic ${t.name} is internal: only the broker writes it`, { details: { topic: t.name } });
        }
      }
      // Over quota: refused whole, before anything is written; the router sees the throttle in
      // the answer and the connection stops reading once it is sent (KIP-219).
      const admission = d.quotas?.admitProduce(quotaClientOf(ctx), req);
      if (admission && !admission.ok) {
        if (req.acks === Acks.NONE) {
          ctx.mute?.(admission.throttleMs);
          return null;
        }
        return admission.response;
      }
      const res = await handleProduce(req, { topics: d.topics, limits: d.produceLimits, clock: d.clock, metrics: d.metrics, region: d.self.region });
      // acks=0: the producer asked for no answer (errors are only logged by the router).
      return req.acks === Acks.NONE ? null : res;
    },

    Fetch: async (req, ctx) => {
      const res = await handleFetch(req, { topics: d.topics, limits: d.fetchLimits, clock: d.clock, onClose: ctx.onClose, metrics: d.metrics, region: d.self.region, sessions: fetchSessions, connectionId: ctx.connectionId });
      // The connection's remaining throttle: a consumer sharing it with a throttled producer holds off too.
      const throttleMs = ctx.throttleRemainingMs?.() ?? 0;
      return throttleMs > 0 ? { ...res, throttleMs } : res;
    },

    ListOffsets: async (req) => ({
      topics: await Promise.all(
        req.topics.map(async (t) => ({
          name: t.name,
          partitions: await Promise.all(
            t.partitions.map(async (lp): Promise<ListOffsetsPartitionResult> => {
              try {
                const p = d.topics.partition(t.name, lp.partition);
                p.checkEpoch(lp.currentLeaderEpoch);
                let offset: number;
                if (lp.timestamp === LATEST_TIMESTAMP) offset = p.highWatermark;
                else if (lp.timestamp === EARLIEST_TIMESTAMP) offset = p.logStartOffset;
                else if (lp.timestamp >= 0) {
                  const found = await p.log.offsetForTimestamp(lp.timestamp);
                  offset = found === null || found >= p.highWatermark ? -1 : found;
                } else throw new EdgeqError('INVALID_REQUEST', `bad timestamp ${lp.timestamp} (use -1 latest, -2 earliest or ms)`);
                return { partition: lp.partition, offset, leaderEpoch: p.leaderEpoch };
              } catch (err) {
                return { partition: lp.partition, offset: -1, leaderEpoch: -1, error: wireError(err) };
              }
            }),
          ),
        })),
      ),
    }),

    CreateTopics: async (req, ctx) => ({
      topics: await sequential(req.topics, async (t) => {
        try {
          // 0 (absent) asks for the default: min(3, live brokers) in a cell, 1 on a lone broker.
          const input = { name: t.name, partitions: t.partitions, ...(t.replicationFactor ? { replicationFactor: t.replicationFactor } : {}), config: { ...(t.config ?? {}) } };
          // The one internal topic a client creates: the gateways' ingress history, local only
          // (a global scope would exchange one region's history into every other's).
          const internal = gatewayOwns(t.name, ctx.clientId);
          if (internal && (input.config.scope ?? 'local') !== 'local') {
            throw new EdgeqError('INVALID_CONFIG', `${t.name} is a local topic, got scope=${input.config.scope}`, { details: { topic: t.name, key: 'scope' } });
          }
          const opts = internal ? { internal: true } : {};
          if (d.cell) await d.cell.createTopic(input, { validateOnly: req.validateOnly === true, ...opts });
          else if (req.validateOnly) d.topics.validateCreate(input, opts);
          else await d.topics.create(input, opts);
          return { name: t.name };
        } catch (err) {
          return { name: t.name, error: wireError(err) };
        }
      }),
    }),

    DeleteTopics: async (req) => ({
      topics: await sequential(req.names, async (name) => {
        try {
          if (d.cell) await d.cell.deleteTopic(name);
          else await d.topics.delete(name);
          return { name };
        } catch (err) {
          return { name, error: wireError(err) };
        }
      }),
    }),

    DescribeConfigs: async (req) => ({
      topics: req.names.map((name) => {
        const view = d.topics.get(name);
        if (!view) {
          return {
            name,
            partitions: 0,
            replicationFactor: 0,
            config: {},
            internal: false,
            error: wireError(new EdgeqError('UNKNOWN_TOPIC_OR_PARTITION', `topic ${name} does not exist`, { details: { topic: name } })),
          };
        }
        return {
          name,
          partitions: view.partitions.length,
          replicationFactor: view.record.replicationFactor,
          config: d.topics.describeConfig(view),
          internal: view.record.internal,
        };
      }),
    }),

    InitProducerId: async (req) => {
      try {
        return await d.producerIds.init(req.producerId ?? -1, req.producerEpoch ?? -1);
      } catch (err) {
        return { producerId: -1, producerEpoch: -1, error: wireError(err) };
      }
    },

    FindCoordinator: async () => {
      const c = d.coordinator();
      if (!c) return { coordinator: null, error: wireError(new EdgeqError('COORDINATOR_NOT_AVAILABLE', 'no broker leads __consumer_offsets yet')) };
      return { coordinator: c };
    },
    JoinGroup: async (req, ctx) => {
      try {
        return await groupsOrError().joinGroup(req, { clientId: ctx.clientId, host: ctx.host });
      } catch (err) {
        return wireFail((error) => ({ error, generationId: -1, protocolName: '', leaderId: '', memberId: req.memberId ?? '', members: [] }))(err);
      }
    },
    SyncGroup: async (req) => groupsOrError().syncGroup(req).catch(wireFail((error) => ({ error, assignment: Buffer.alloc(0) }))),
    Heartbeat: async (req) => (d.groups() ? groupsOrError().heartbeat(req) : { error: notCoordinator() }),
    LeaveGroup: async (req) => (d.groups() ? groupsOrError().leaveGroup(req) : { error: notCoordinator() }),
    OffsetCommit: async (req) => (d.groups() ? groupsOrError().commitOffsets(req) : { error: notCoordinator(), topics: [] }),
    OffsetFetch: async (req, ctx) => {
      if (!d.groups()) return { error: notCoordinator(), topics: [] };
      const res = await groupsOrError().fetchOffsets(req);
      // A fetch without topics lists every topic the group committed: a tenant sees only those it
      // may read (a fetch naming topics was checked topic by topic before it got here).
      const p = ctx.principal;
      return p?.role === 'tenant' ? { ...res, topics: res.topics.filter((t) => p.can('read', t.name)) } : res;
    },
    // A broker that does not coordinate holds no groups: an empty list, so listings over every
    // broker just work.
    ListGroups: async () => (d.groups() ? groupsOrError().listGroups() : { groups: [] }),
    DescribeGroups: async (req) => {
      const g = d.groups();
      if (g) return g.describeGroups(req);
      const error = notCoordinator();
      return { groups: req.groupIds.map((groupId) => ({ groupId, error, state: '', protocolType: '', protocolName: '', generationId: -1, members: [], leaderId: '' })) };
    },

    OffsetForLeaderEpoch: async (req) => ({
      topics: req.topics.map((t) => ({
        name: t.name,
        partitions: t.partitions.map((op) => {
          try {
            const p = d.topics.partition(t.name, op.partition);
            p.checkEpoch(op.currentLeaderEpoch);
            if (p.role !== 'leader') throw new EdgeqError('NOT_LEADER', `broker ${d.self.id} does not lead ${t.name}-${op.partition}`);
            const r = p.endOffsetForEpoch(op.leaderEpoch);
            return { partition: op.partition, leaderEpoch: r.epoch, endOffset: r.endOffset };
          } catch (err) {
            return { partition: op.partition, leaderEpoch: -1, endOffset: -1, error: wireError(err) };
          }
        }),
      })),
    }),

    Authenticate: async (req, ctx) => {
      // Auth off (the local deployment): any key is taken, and nothing changes.
      if (!d.auth) return { tenant: '', role: 'none' };
      if (req.mechanism !== AUTH_MECHANISM_API_KEY) {
        d.auth.countRefusal('bad_key');
        throw new EdgeqError('UNAUTHENTICATED', `mechanism "${req.mechanism}" is not supported (${AUTH_MECHANISM_API_KEY} is)`, { details: { mechanism: req.mechanism } });
      }
      const p = d.auth.authenticateKey(req.apiKey);
      if (!p) {
        d.auth.countRefusal('bad_key');
        throw new EdgeqError('UNAUTHENTICATED', 'the API key is not valid', { details: { presented: req.apiKey !== '' } });
      }
      ctx.principal = p;
      // A tenant cannot pass for one of the cell's own clients (never limited; the gateway's may
      // write the ingress history) by naming itself so.
      if (p.role === 'tenant' && isInternalClientId(ctx.clientId)) ctx.clientId = p.tenant;
      return { tenant: p.tenant, role: p.role };
    },

    DescribeQuotas: async () => {
      if (!d.quotas) return { quotas: [] };
      return d.quotas.describe();
    },

    AlterQuotas: async (req) => {
      if (!d.quotas) throw new EdgeqError('UNSUPPORTED_API', `broker ${d.self.id} keeps no quotas`);
      return d.quotas.alter(req);
    },

    CellStatus: async () => {
      const replicas = d.topics.localPartitions().map((p) => {
        const st = d.cell?.partitionState(p.topic, p.index);
        return {
          topic: p.topic,
          partition: p.index,
          leaderId: st?.leader ?? p.leaderId,
          leaderEpoch: st?.leaderEpoch ?? p.leaderEpoch,
          isr: st?.isr ?? p.isr,
          replicas: st?.replicas ?? p.replicas,
          role: p.role,
          highWatermark: p.highWatermark,
          logEndOffset: p.logEndOffset,
          logStartOffset: p.logStartOffset,
        };
      });
      const brokers = d.cell
        ? d.cell.brokerStatus()
        : [{ id: d.self.id, pid: d.pid, host: d.self.host, port: d.self.port, region: d.self.region, alive: true }];
      return { cellId: d.cell?.cellId ?? d.clusterId, brokerId: d.self.id, brokers, replicas, leaseValid: d.cell ? d.cell.canLead() : true, fsyncP99Ms: d.metrics?.fsyncP99Ms() ?? 0 };
    },
  };
}

/**
 * True for the internal topic the gateways write themselves (and only they). Without auth this
 * keeps user clients from mistakes, not from an attacker on the network; with auth a tenant
 * cannot take the gateway's client id (ApiVersions and Authenticate rename it to its tenant).
 */
function gatewayOwns(topic: string, clientId: string): boolean {
  return topic === INGRESS_HISTORY_TOPIC && clientId === GATEWAY_CLIENT_ID;
}

/**
 * Who a produce's quota is charged to: the authenticated tenant; the cell's own principals as
 * internal client ids (never limited); without auth, the connection's client id as before.
 */
function quotaClientOf(ctx: RequestContext): string {
  const p = ctx.principal;
  if (!p) return ctx.clientId;
  return p.role === 'tenant' ? p.tenant : internalClientId(p.name);
}

/** Runs `fn` over `items` one after another (topic admin changes are serialised anyway). */
async function sequential<T, R>(items: readonly T[], fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (const item of items) out.push(await fn(item));
  return out;
}
