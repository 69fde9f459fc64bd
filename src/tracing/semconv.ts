/**
 * The attribute names and values edgeq's spans use: the OpenTelemetry messaging semantic
 * conventions (semconv 1.45, `messaging.*`, still "development" upstream, so the names are kept
 * here rather than imported from the package's large incubating entry point; a unit test checks
 * them against it), plus edgeq's own `edgeq.*` attributes for what the conventions do not name.
 */

/** `messaging.system`: always `edgeq`. */
export const ATTR_MESSAGING_SYSTEM = 'messaging.system';
export const MESSAGING_SYSTEM = 'edgeq';
/** `messaging.destination.name`: the topic. */
export const ATTR_MESSAGING_DESTINATION_NAME = 'messaging.destination.name';
/** `messaging.destination.partition.id`: the partition, as a string. */
export const ATTR_MESSAGING_DESTINATION_PARTITION_ID = 'messaging.destination.partition.id';
/** `messaging.operation.type`: `send`, `receive` (client operations only; see docs/tracing.md). */
export const ATTR_MESSAGING_OPERATION_TYPE = 'messaging.operation.type';
/** `messaging.operation.name`: the system-specific name (`send`, `append`, `commit`, `replicate`, `apply`, `receive`). */
export const ATTR_MESSAGING_OPERATION_NAME = 'messaging.operation.name';
/** `messaging.batch.message_count`: records of the operation (set when more than one). */
export const ATTR_MESSAGING_BATCH_MESSAGE_COUNT = 'messaging.batch.message_count';
/** `messaging.consumer.group.name`: the consumer group of a group read. */
export const ATTR_MESSAGING_CONSUMER_GROUP_NAME = 'messaging.consumer.group.name';
/** `messaging.client.id`: the process that acted (gateway member, broker id). */
export const ATTR_MESSAGING_CLIENT_ID = 'messaging.client.id';

/** The record's offset in this region's log (the first record's when several share the context). */
export const ATTR_EDGEQ_OFFSET = 'edgeq.offset';
/** The region whose process made the span. */
export const ATTR_EDGEQ_REGION = 'edgeq.region';
/** Records applied from another region: where they were written and at which offset there. */
export const ATTR_EDGEQ_ORIGIN_REGION = 'edgeq.origin.region';
export const ATTR_EDGEQ_ORIGIN_OFFSET = 'edgeq.origin.offset';
/** The broker that made a broker span. */
export const ATTR_EDGEQ_BROKER_ID = 'edgeq.broker.id';
/** acks of the produce the broker answered (`all`, `leader`). */
export const ATTR_EDGEQ_ACKS = 'edgeq.acks';
/** In-sync replicas when an acks=all write was committed. */
export const ATTR_EDGEQ_ISR_SIZE = 'edgeq.isr.size';
/** Creation contexts in one batch beyond TRACE_CONTEXTS_PER_BATCH_MAX, not given a span. */
export const ATTR_EDGEQ_CONTEXTS_DROPPED = 'edgeq.trace.contexts_dropped';

/** Operation types (messaging.operation.type) edgeq's client-side spans use. */
export type MessagingOperationType = 'send' | 'receive';
