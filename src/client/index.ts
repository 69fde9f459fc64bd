/**
 * The edgeq client library: producer, consumer and admin over the binary protocol, with a
 * metadata-aware cluster view, retries with jittered backoff and Kafka-compatible partitioning.
 */
export { createClient, EdgeqClient, type ClientOptions } from './client.ts';
export { Producer, createProducer, PRODUCER_DEFAULTS, type ProducerOptions, type ProducerRecord, type SendOptions, type AcksOption, type RecordMetadata } from './producer.ts';
export {
  Consumer,
  createConsumer,
  CONSUMER_DEFAULTS,
  type ConsumerOptions,
  type ConsumerRecord,
  type DeliveryMode,
  type PollOptions,
  type TopicPartition,
  type TopicPartitionOffset,
} from './consumer.ts';
export { Admin, createAdmin, type AdminOptions, type CellReadiness, type NewTopic, type TopicDescription, type GroupDescription, type GroupMemberDescription, type CellStatus, type CellPartitionStatus, type BrokerStatus } from './admin.ts';
export type { OffsetSpec } from './list-offsets.ts';
export { Cluster, CLUSTER_DEFAULTS, isStaleMetadataError, type ClusterOptions, type TopicInfo, type PartitionInfo } from './cluster.ts';
// The connection lives in the protocol layer (the broker's replica fetcher shares it); exported
// here too until every importer takes it from there.
export { Connection, CONNECTION_DEFAULTS, parseAddress, type BrokerAddress, type ConnectionOptions, type RequestOptions, type SocketFactory } from '../protocol/index.ts';
export { retry, backoffDelayMs, sleep, RETRY_DEFAULTS, type RetryOptions } from './retry.ts';
export { DefaultPartitioner, partitionForKey, type Partitioner, type PartitionInput } from './partitioner.ts';
export { murmur2, toPositive } from './murmur2.ts';
export type { BufferFullPolicy } from './buffer-budget.ts';
export { GeoFilter, geoMetadata, isCovered, parseGeoMetadata, parseVector, GEO_VECTOR_ORIGINS_MAX, type GeoPosition, type GeoVector, type FilterableRecord } from './geo-filter.ts';
export { fetchCommitsOf, geoGroupId, GEO_GROUP_PREFIX } from './geo-resume.ts';
