/**
 * The broker: topics and partitions on the segment log, the binary protocol server, idempotent
 * producer state, and the consumer-group coordinator wired in.
 */
export { Broker, type BrokerOptions } from './broker.ts';
export { TopicManager, TOPIC_LIMITS_DEFAULT, type TopicLimits, type TopicView, type CreateTopicInput } from './topic-manager.ts';
export { Partition } from './partition.ts';
export { ProducerState, PRODUCER_RECENT_BATCHES_MAX } from './producer-state.ts';
export { OriginState, composeGuards, ORIGIN_INDEX_ENTRIES_MAX, ORIGIN_REGIONS_MAX } from './origin-state.ts';
export { ProducerIds, FileProducerIdStore, PRODUCER_ID_BLOCK_SIZE, PRODUCER_EPOCH_MAX, type ProducerIdStore } from './producer-ids.ts';
export { parseTopicConfig, describeTopicConfig, defaultMinInsyncReplicas, TOPIC_CONFIG_KEYS, TOPIC_SCOPES, type TopicScope, type TopicSettings } from './topic-config.ts';
export {
  validateTopicName,
  validateUserTopicName,
  isInternalTopic,
  CONSUMER_OFFSETS_TOPIC,
  INGRESS_HISTORY_TOPIC,
  INTERNAL_TOPIC_PREFIX,
  TOPIC_NAME_BYTES_MAX,
} from './topic-name.ts';
export { CONNECTION_LIMITS_DEFAULT, type ConnectionLimits } from './server-connection.ts';
export { FETCH_LIMITS_DEFAULT, type FetchLimits } from './fetch-handler.ts';
export type { CellController, CellHost, PartitionState, ProducerIdSource, RecoveringReplica } from './controller.ts';
export type { TopicRecord } from './topic-store.ts';
export { LeaderEpochCache } from './leader-epoch-cache.ts';
export { ReplicaFetchers, REPLICA_FETCH_DEFAULTS, type ReplicaFetchLimits } from './replica-fetcher.ts';
export { ClientQuotas, ANONYMOUS_TENANT, type ProduceAdmission, type QuotaBackend } from './client-quotas.ts';
export { QuotaFile, QUOTAS_FILE } from './quota-file.ts';
export { QUOTA_OPS_MAX, parseQuotaOp, parseAlterQuotas, type QuotaChange } from './quota-changes.ts';
export { BrokerAuth, BinaryPrincipal, BINARY_GRANTS_PER_PRINCIPAL_MAX, GRANT_MEMO_TOPICS_MAX, type BinaryKeysFile, type GrantAction, type PrincipalRole } from './broker-auth.ts';
export { authorizeRequest } from './authorizer.ts';
