/**
 * Authorization of binary-protocol requests, the gateway's grants applied per API (Kafka's ACL
 * operations, coarsened to edgeq's read/write/admin): called by the router after a request
 * decoded and before its handler runs, so a refused request changes nothing. A refusal throws a
 * typed error (UNAUTHENTICATED: no principal yet; FORBIDDEN: a grant is missing, or a replica
 * fetch from a principal that is not a broker) and is counted.
 *
 * | API | needs |
 * | --- | --- |
 * | ApiVersions, Authenticate | nothing (they come first) |
 * | Produce | write on each topic |
 * | Fetch, ListOffsets, OffsetForLeaderEpoch, OffsetCommit, OffsetFetch | read on each topic |
 * | Fetch with a replica id, OffsetForLeaderEpoch with a replica id | the broker role |
 * | CreateTopics, DeleteTopics, DescribeConfigs | admin on each topic |
 * | CellStatus, DescribeQuotas, AlterQuotas | admin on `*` |
 * | Metadata, InitProducerId, groups (Find/Join/Sync/Heartbeat/Leave/List/Describe) | authenticated |
 *
 * The cost per request with auth on is a role test and, for tenants, one memoised map lookup per
 * topic (BinaryPrincipal.can); with auth off the router skips this file entirely.
 */
import { EdgeqError } from '../core/index.ts';
import type { ApiName } from '../protocol/index.ts';
import type { BinaryPrincipal, BrokerAuth, GrantAction } from './broker-auth.ts';

/** What the check reads of a connection. */
export interface AuthContext {
  principal?: BinaryPrincipal | null;
}

type Topics = readonly { name: string }[] | undefined | null;

/** Throws UNAUTHENTICATED or FORBIDDEN (counted) unless `ctx`'s principal may make this request. */
export function authorizeRequest(auth: BrokerAuth, name: ApiName, req: object, ctx: AuthContext): void {
  if (name === 'ApiVersions' || name === 'Authenticate') return;
  const p = ctx.principal;
  if (!p) {
    auth.countRefusal('unauthenticated');
    throw new EdgeqError('UNAUTHENTICATED', `${name} needs an authenticated connection: send Authenticate with an API key first, or connect with a client certificate the broker knows`, {
      details: { api: name },
    });
  }
  if (p.role === 'broker') return;
  const r = req as { replicaId?: number | null; topics?: Topics; names?: readonly string[] };
  if ((name === 'Fetch' || name === 'OffsetForLeaderEpoch') && (r.replicaId ?? -1) >= 0) {
    auth.countRefusal('replica_fetch');
    throw new EdgeqError('FORBIDDEN', `${p.name} is not a broker of this cell: ${name} as replica ${r.replicaId} is refused`, { details: { api: name, principal: p.name, replicaId: r.replicaId } });
  }
  if (p.role !== 'tenant') return;
  switch (name) {
    case 'Produce':
      return eachTopic(auth, p, 'write', name, r.topics);
    case 'Fetch':
    case 'ListOffsets':
    case 'OffsetForLeaderEpoch':
    case 'OffsetCommit':
    case 'OffsetFetch':
      return eachTopic(auth, p, 'read', name, r.topics);
    case 'CreateTopics':
      return eachTopic(auth, p, 'admin', name, r.topics);
    case 'DeleteTopics':
    case 'DescribeConfigs':
      return eachName(auth, p, 'admin', name, r.names);
    case 'CellStatus':
    case 'DescribeQuotas':
    case 'AlterQuotas':
      return check(auth, p, 'admin', name, '*');
    default:
      return;
  }
}

function eachTopic(auth: BrokerAuth, p: BinaryPrincipal, action: GrantAction, api: ApiName, topics: Topics): void {
  if (!topics) return;
  for (const t of topics) check(auth, p, action, api, t.name);
}

function eachName(auth: BrokerAuth, p: BinaryPrincipal, action: GrantAction, api: ApiName, names: readonly string[] | undefined): void {
  if (!names) return;
  for (const n of names) check(auth, p, action, api, n);
}

function check(auth: BrokerAuth, p: BinaryPrincipal, action: GrantAction, api: ApiName, topic: string): void {
  if (p.can(action, topic)) return;
  auth.countRefusal('forbidden');
  throw new EdgeqError('FORBIDDEN', `tenant "${p.tenant}" has no ${action} grant on ${topic === '*' ? 'every topic' : `topic "${topic}"`}`, {
    details: { api, action, topic, tenant: p.tenant },
  });
}
