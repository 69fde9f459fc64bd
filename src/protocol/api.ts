/**
 * The API table: every request the protocol knows, its numeric key, the versions this build
 * speaks, and the protobuf messages of its request and response. Keys are part of the wire
 * format: never renumber, only append.
 */
import type * as M from './messages.ts';

export const ApiKey = {
  ApiVersions: 0,
  Metadata: 1,
  Produce: 2,
  Fetch: 3,
  ListOffsets: 4,
  CreateTopics: 5,
  DeleteTopics: 6,
  DescribeConfigs: 7,
  InitProducerId: 8,
  FindCoordinator: 9,
  JoinGroup: 10,
  SyncGroup: 11,
  Heartbeat: 12,
  LeaveGroup: 13,
  OffsetCommit: 14,
  OffsetFetch: 15,
  ListGroups: 16,
  DescribeGroups: 17,
  OffsetForLeaderEpoch: 18,
  CellStatus: 19,
  DescribeQuotas: 20,
  AlterQuotas: 21,
  Authenticate: 22,
} as const;

export type ApiName = keyof typeof ApiKey;
export type ApiKeyValue = (typeof ApiKey)[ApiName];

/** Request and response shapes per API, for typed clients and handlers. */
export interface ApiTypes {
  ApiVersions: [M.ApiVersionsRequest, M.ApiVersionsResponse];
  Metadata: [M.MetadataRequest, M.MetadataResponse];
  Produce: [M.ProduceRequest, M.ProduceResponse];
  Fetch: [M.FetchRequest, M.FetchResponse];
  ListOffsets: [M.ListOffsetsRequest, M.ListOffsetsResponse];
  CreateTopics: [M.CreateTopicsRequest, M.CreateTopicsResponse];
  DeleteTopics: [M.DeleteTopicsRequest, M.DeleteTopicsResponse];
  DescribeConfigs: [M.DescribeConfigsRequest, M.DescribeConfigsResponse];
  InitProducerId: [M.InitProducerIdRequest, M.InitProducerIdResponse];
  FindCoordinator: [M.FindCoordinatorRequest, M.FindCoordinatorResponse];
  JoinGroup: [M.JoinGroupRequest, M.JoinGroupResponse];
  SyncGroup: [M.SyncGroupRequest, M.SyncGroupResponse];
  Heartbeat: [M.HeartbeatRequest, M.HeartbeatResponse];
  LeaveGroup: [M.LeaveGroupRequest, M.LeaveGroupResponse];
  OffsetCommit: [M.OffsetCommitRequest, M.OffsetCommitResponse];
  OffsetFetch: [M.OffsetFetchRequest, M.OffsetFetchResponse];
  ListGroups: [M.ListGroupsRequest, M.ListGroupsResponse];
  DescribeGroups: [M.DescribeGroupsRequest, M.DescribeGroupsResponse];
  OffsetForLeaderEpoch: [M.OffsetForLeaderEpochRequest, M.OffsetForLeaderEpochResponse];
  CellStatus: [M.CellStatusRequest, M.CellStatusResponse];
  DescribeQuotas: [M.DescribeQuotasRequest, M.DescribeQuotasResponse];
  AlterQuotas: [M.AlterQuotasRequest, M.AlterQuotasResponse];
  Authenticate: [M.AuthenticateRequest, M.AuthenticateResponse];
}

export type RequestOf<N extends ApiName> = ApiTypes[N][0];
export type ResponseOf<N extends ApiName> = ApiTypes[N][1];

/** One row of the table. */
export interface ApiSpec {
  name: ApiName;
  key: number;
  minVersion: number;
  maxVersion: number;
  requestType: string;
  responseType: string;
}

/** Versions this build speaks. Version 1 is the first; a new field that matters bumps it. */
const VERSIONS: Record<ApiName, [number, number]> = {
  ApiVersions: [1, 1],
  Metadata: [1, 1],
  Produce: [1, 1],
  // 2: the origin filter of global topics (FetchPartition.origin, after_origin_offset) and the
  // results' scanned_to and origin_cursors. A version-1 broker ignores the filter and answers
  // every batch, so a replicator needs version 2 (which also means origin-aware Produce).
  Fetch: [1, 2],
  ListOffsets: [1, 1],
  CreateTopics: [1, 1],
  DeleteTopics: [1, 1],
  DescribeConfigs: [1, 1],
  InitProducerId: [1, 1],
  FindCoordinator: [1, 1],
  JoinGroup: [1, 1],
  SyncGroup: [1, 1],
  Heartbeat: [1, 1],
  LeaveGroup: [1, 1],
  OffsetCommit: [1, 1],
  OffsetFetch: [1, 1],
  ListGroups: [1, 1],
  DescribeGroups: [1, 1],
  OffsetForLeaderEpoch: [1, 1],
  CellStatus: [1, 1],
  DescribeQuotas: [1, 1],
  AlterQuotas: [1, 1],
  Authenticate: [1, 1],
};

export const API_SPECS: readonly ApiSpec[] = (Object.keys(ApiKey) as ApiName[]).map((name) => ({
  name,
  key: ApiKey[name],
  minVersion: VERSIONS[name][0],
  maxVersion: VERSIONS[name][1],
  requestType: `${name}Request`,
  responseType: `${name}Response`,
}));

const SPEC_BY_KEY = new Map<number, ApiSpec>(API_SPECS.map((s) => [s.key, s]));

/** The spec of an API key, or undefined for a key this build does not know. */
export function apiSpec(key: number): ApiSpec | undefined {
  return SPEC_BY_KEY.get(key);
}

/** The versions this side speaks, as sent in an ApiVersions response. */
export function supportedVersions(): M.ApiVersionRange[] {
  return API_SPECS.map((s) => ({ apiKey: s.key, minVersion: s.minVersion, maxVersion: s.maxVersion }));
}

/**
 * Picks, per API, the highest version both sides speak; APIs the peer lacks or whose ranges do
 * not overlap are left out (a call to them fails with UNSUPPORTED_VERSION on this side).
 */
export function negotiateVersions(peer: readonly M.ApiVersionRange[]): Map<number, number> {
  const chosen = new Map<number, number>();
  for (const range of peer) {
    const mine = SPEC_BY_KEY.get(range.apiKey);
    if (!mine) continue;
    const hi = Math.min(mine.maxVersion, range.maxVersion);
    const lo = Math.max(mine.minVersion, range.minVersion);
    if (hi >= lo) chosen.set(range.apiKey, hi);
  }
  return chosen;
}
