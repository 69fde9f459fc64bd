/**
 * TypeScript shapes of the messages in edgeq.proto (protobufjs turns snake_case into camelCase).
 * int64 fields are plain numbers: protobufjs runs without Long (see schema.ts), and offsets stay
 * below 2^53. On decode every field is present (proto3 defaults); on encode optional ones may be
 * left out. `messages.test.ts` checks these shapes against the .proto so they cannot drift.
 */

/** A typed error on the wire; null/absent means success. */
export interface WireError {
  code: number;
  message: string;
  retriable: boolean;
}

export interface ErrorResponse {
  error: WireError | null;
}

export interface ApiVersionsRequest {
  clientId?: string;
  clientSoftware?: string;
}
export interface ApiVersionRange {
  apiKey: number;
  minVersion: number;
  maxVersion: number;
}
export interface ApiVersionsResponse {
  error?: WireError | null;
  apis: ApiVersionRange[];
  brokerId: number;
  clusterId: string;
  frameBytesMax: number;
}

export interface MetadataRequest {
  topics?: string[];
  allTopics?: boolean;
  includeInternal?: boolean;
}
export interface BrokerInfo {
  id: number;
  host: string;
  port: number;
  region: string;
}
export interface PartitionMetadata {
  error?: WireError | null;
  partition: number;
  leaderId: number;
  leaderEpoch: number;
  replicas: number[];
  isr: number[];
}
export interface TopicMetadata {
  error?: WireError | null;
  name: string;
  partitions: PartitionMetadata[];
  internal: boolean;
  /** The topic's identity; a re-created topic has a new one (empty from an older broker). */
  topicId?: string;
  /** When the topic was created (wall-clock ms); 0 from an older broker. */
  createdAtMs?: number;
}
export interface MetadataResponse {
  brokers: BrokerInfo[];
  controllerId: number;
  topics: TopicMetadata[];
  clusterId: string;
}

/** Values of the Acks enum. */
export const Acks = { UNSPECIFIED: 0, NONE: 1, LEADER: 2, ALL: 3 } as const;
export type AcksValue = (typeof Acks)[keyof typeof Acks];

export interface ProducePartition {
  partition: number;
  records: Uint8Array;
  /** Absent (null once decoded) or -1: no epoch check. */
  leaderEpoch?: number | null;
  /** Global topics: append the origin batch only if the origin's cursor is exactly this (absent/null: no check). */
  originCursorExpected?: number | null;
}
export interface ProduceTopic {
  name: string;
  partitions: ProducePartition[];
  /** The id the producer resolved the name to; empty or absent skips the check. */
  topicId?: string;
}
export interface ProduceRequest {
  acks?: AcksValue;
  timeoutMs?: number;
  topics: ProduceTopic[];
}
export interface ProducePartitionResult {
  partition: number;
  error?: WireError | null;
  baseOffset: number;
  logAppendTimeMs: number;
  logStartOffset: number;
  leaderEpoch: number;
  duplicate?: boolean;
}
export interface ProduceTopicResult {
  name: string;
  partitions: ProducePartitionResult[];
}
export interface ProduceResponse {
  topics: ProduceTopicResult[];
  throttleMs?: number;
}

export interface FetchPartition {
  partition: number;
  fetchOffset: number;
  maxBytes: number;
  currentLeaderEpoch?: number | null;
  /**
   * Global topics (Fetch version 2), consumers only: only the batches of this origin region (own
   * writes stamped with their origin when it is the broker's region). Absent (null once decoded):
   * every batch as stored.
   */
  origin?: string | null;
  /** With `origin`: skip batches whose origin offsets are all at or below this. */
  afterOriginOffset?: number | null;
  /** With an origin filter: the fetch session (fetch_offset -2 continues it). */
  session?: string | null;
}
export interface FetchTopic {
  name: string;
  partitions: FetchPartition[];
  /** The id the consumer resolved the name to; empty or absent skips the check. */
  topicId?: string;
}
export interface FetchRequest {
  /** A follower's broker id; absent (null once decoded) or -1 for consumers. */
  replicaId?: number | null;
  maxWaitMs?: number;
  minBytes?: number;
  maxBytes?: number;
  topics: FetchTopic[];
}
export interface FetchPartitionResult {
  partition: number;
  error?: WireError | null;
  highWatermark: number;
  logStartOffset: number;
  logEndOffset: number;
  records: Uint8Array;
  leaderEpoch: number;
  /** Local offset after the last batch scanned (the next fetch offset); -1 when nothing was read. */
  scannedTo?: number;
  /** Global topics: highest origin offset held per origin region, the broker's own included. */
  originCursors?: Record<string, number>;
  /** Global topics: per origin, the highest origin offset retention deleted here (or a bound above it). */
  originDeletedUpTo?: Record<string, number>;
}
export interface FetchTopicResult {
  name: string;
  partitions: FetchPartitionResult[];
}
export interface FetchResponse {
  topics: FetchTopicResult[];
  throttleMs?: number;
}

/** Special timestamps of ListOffsets. */
export const LATEST_TIMESTAMP = -1;
export const EARLIEST_TIMESTAMP = -2;

export interface ListOffsetsPartition {
  partition: number;
  timestamp: number;
  currentLeaderEpoch?: number | null;
}
export interface ListOffsetsTopic {
  name: string;
  partitions: ListOffsetsPartition[];
}
export interface ListOffsetsRequest {
  topics: ListOffsetsTopic[];
}
export interface ListOffsetsPartitionResult {
  partition: number;
  error?: WireError | null;
  offset: number;
  leaderEpoch: number;
}
export interface ListOffsetsTopicResult {
  name: string;
  partitions: ListOffsetsPartitionResult[];
}
export interface ListOffsetsResponse {
  topics: ListOffsetsTopicResult[];
}

export interface CreatableTopic {
  name: string;
  partitions: number;
  replicationFactor?: number;
  config?: Record<string, string>;
}
export interface CreateTopicsRequest {
  topics: CreatableTopic[];
  validateOnly?: boolean;
}
export interface TopicResult {
  name: string;
  error?: WireError | null;
}
export interface CreateTopicsResponse {
  topics: TopicResult[];
}
export interface DeleteTopicsRequest {
  names: string[];
}
export interface DeleteTopicsResponse {
  topics: TopicResult[];
}
export interface DescribeConfigsRequest {
  names: string[];
}
export interface TopicConfigResult {
  name: string;
  error?: WireError | null;
  partitions: number;
  replicationFactor: number;
  config: Record<string, string>;
  internal: boolean;
}
export interface DescribeConfigsResponse {
  topics: TopicConfigResult[];
}

export interface InitProducerIdRequest {
  producerId?: number;
  producerEpoch?: number;
}
export interface InitProducerIdResponse {
  error?: WireError | null;
  producerId: number;
  producerEpoch: number;
}

export interface FindCoordinatorRequest {
  key: string;
}
export interface FindCoordinatorResponse {
  error?: WireError | null;
  coordinator: BrokerInfo | null;
}
export interface GroupProtocol {
  name: string;
  metadata: Uint8Array;
}
export interface JoinGroupRequest {
  groupId: string;
  sessionTimeoutMs: number;
  rebalanceTimeoutMs: number;
  memberId?: string;
  protocolType: string;
  protocols: GroupProtocol[];
  clientId?: string;
}
export interface JoinGroupMember {
  memberId: string;
  metadata: Uint8Array;
}
export interface JoinGroupResponse {
  error?: WireError | null;
  generationId: number;
  protocolName: string;
  leaderId: string;
  memberId: string;
  members: JoinGroupMember[];
}
export interface MemberAssignment {
  memberId: string;
  assignment: Uint8Array;
}
export interface SyncGroupRequest {
  groupId: string;
  generationId: number;
  memberId: string;
  assignments?: MemberAssignment[];
}
export interface SyncGroupResponse {
  error?: WireError | null;
  assignment: Uint8Array;
}
export interface HeartbeatRequest {
  groupId: string;
  generationId: number;
  memberId: string;
}
export interface HeartbeatResponse {
  error?: WireError | null;
}
export interface LeaveGroupRequest {
  groupId: string;
  memberId: string;
}
export interface LeaveGroupResponse {
  error?: WireError | null;
}
export interface OffsetCommitPartition {
  partition: number;
  offset: number;
  metadata?: string;
}
export interface OffsetCommitTopic {
  name: string;
  partitions: OffsetCommitPartition[];
  /** The topic id the offsets were consumed from; empty or absent skips the check. */
  topicId?: string;
}
export interface OffsetCommitRequest {
  groupId: string;
  generationId: number;
  memberId: string;
  topics: OffsetCommitTopic[];
}
export interface OffsetCommitPartitionResult {
  partition: number;
  error?: WireError | null;
}
export interface OffsetCommitTopicResult {
  name: string;
  partitions: OffsetCommitPartitionResult[];
}
export interface OffsetCommitResponse {
  error?: WireError | null;
  topics: OffsetCommitTopicResult[];
}
export interface OffsetFetchTopic {
  name: string;
  partitions: number[];
}
export interface OffsetFetchRequest {
  groupId: string;
  topics?: OffsetFetchTopic[];
}
export interface OffsetFetchPartitionResult {
  partition: number;
  error?: WireError | null;
  offset: number;
  metadata: string;
}
export interface OffsetFetchTopicResult {
  name: string;
  partitions: OffsetFetchPartitionResult[];
}
export interface OffsetFetchResponse {
  error?: WireError | null;
  topics: OffsetFetchTopicResult[];
}
export type ListGroupsRequest = Record<string, never>;
export interface GroupListing {
  groupId: string;
  state: string;
  protocolType: string;
}
export interface ListGroupsResponse {
  error?: WireError | null;
  groups: GroupListing[];
}
export interface DescribeGroupsRequest {
  groupIds: string[];
}
export interface GroupMemberDescription {
  memberId: string;
  clientId: string;
  host: string;
  metadata: Uint8Array;
  assignment: Uint8Array;
}
export interface GroupDescription {
  groupId: string;
  error?: WireError | null;
  state: string;
  protocolType: string;
  protocolName: string;
  generationId: number;
  members: GroupMemberDescription[];
  leaderId: string;
}
export interface DescribeGroupsResponse {
  groups: GroupDescription[];
}

export interface ConsumerSubscription {
  topics: string[];
  userData?: Uint8Array;
}
export interface TopicPartitions {
  topic: string;
  partitions: number[];
}
export interface ConsumerAssignment {
  partitions: TopicPartitions[];
  userData?: Uint8Array;
}

export interface OffsetForLeaderEpochPartition {
  partition: number;
  leaderEpoch: number;
  currentLeaderEpoch?: number | null;
}
export interface OffsetForLeaderEpochTopic {
  name: string;
  partitions: OffsetForLeaderEpochPartition[];
}
export interface OffsetForLeaderEpochRequest {
  replicaId?: number;
  topics: OffsetForLeaderEpochTopic[];
}
export interface EpochEndOffset {
  partition: number;
  error?: WireError | null;
  leaderEpoch: number;
  endOffset: number;
}
export interface OffsetForLeaderEpochTopicResult {
  name: string;
  partitions: EpochEndOffset[];
}
export interface OffsetForLeaderEpochResponse {
  topics: OffsetForLeaderEpochTopicResult[];
}

export type CellStatusRequest = Record<string, never>;
export interface BrokerStatus {
  id: number;
  pid: number;
  host: string;
  port: number;
  region: string;
  alive: boolean;
}
export interface ReplicaStatus {
  topic: string;
  partition: number;
  leaderId: number;
  leaderEpoch: number;
  isr: number[];
  replicas: number[];
  role: 'leader' | 'follower' | 'none' | string;
  highWatermark: number;
  logEndOffset: number;
  logStartOffset: number;
}
export interface CellStatusResponse {
  cellId: string;
  brokerId: number;
  brokers: BrokerStatus[];
  replicas: ReplicaStatus[];
  leaseValid: boolean;
  /** p99 of this broker's fsyncs over the last few seconds (ms); 0 from an older broker. */
  fsyncP99Ms?: number;
}

/** A quota as DescribeQuotas lists it (values are integers carried as doubles, see edgeq.proto). */
export interface QuotaEntry {
  tenant: string;
  topic: string;
  recordsPerSec: number;
  bytesPerSec: number;
  burstRecords: number;
  burstBytes: number;
  scope: string;
}
export type DescribeQuotasRequest = Record<string, never>;
export interface DescribeQuotasResponse {
  quotas: QuotaEntry[];
  error?: WireError | null;
}
/** One change of AlterQuotas: a put (values given) or a remove. Absent values are null once decoded. */
export interface AlterQuotaOp {
  tenant: string;
  topic: string;
  remove?: boolean;
  recordsPerSec?: number | null;
  bytesPerSec?: number | null;
  burstRecords?: number | null;
  burstBytes?: number | null;
  scope?: string | null;
}
export interface AlterQuotasRequest {
  ops: AlterQuotaOp[];
}
export interface AlterQuotaResult {
  tenant: string;
  topic: string;
  error?: WireError | null;
  /** Whether (tenant, topic) had a quota before. */
  existed?: boolean;
  /** With INVALID_ARGUMENT: the field refused. */
  invalidField?: string;
}
export interface AlterQuotasResponse {
  results: AlterQuotaResult[];
}

/** Authenticate (key 22): the mechanisms a broker accepts. */
export const AUTH_MECHANISM_API_KEY = 'API_KEY';
export interface AuthenticateRequest {
  mechanism: string;
  apiKey: string;
}
export interface AuthenticateResponse {
  error?: WireError | null;
  tenant: string;
  role: string;
}
