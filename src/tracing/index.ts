/**
 * Tracing (OpenTelemetry): a record's path from the producing gateway through the leader, its
 * followers and other regions' exchanges to a consumer, as one trace carried in the records'
 * `traceparent` headers (docs/tracing.md). Off unless an OTLP endpoint is configured.
 */
export { resolveTracingConfig, EXPORT_DELAY_MS_DEFAULT, EXPORT_DELAY_MS_MAX, type TracingConfig, type TracingFlags } from './config.ts';
export { installTracing, shutdownTracing, SPAN_QUEUE_MAX, SPAN_EXPORT_BATCH_MAX, SPAN_EXPORT_TIMEOUT_MS } from './tracer.ts';
export { warmUpTracing, WARM_UP_ROUNDS } from './warm-up.ts';
export { activeTracer, setSampleRatio, type ActiveTracer, type TracingIdentity } from './state.ts';
export { TRACE_HEADER, TRACE_CONTEXTS_PER_BATCH_MAX, formatTraceparent, parseTraceparent, sampled, injectRecords, recordContext, anyBatchTraced, tracedRecords, type TracedRecords } from './carrier.ts';
export { traceSend, traceReceive, traceGroupReceive, traceDelivered, receiveSpan, traceAppend, traceReplica, traceApplied, traceNowMs, type AppendTrace, type ReplicaTrace, type ReadRecordLike } from './spans.ts';
export * from './semconv.ts';
export { TRACING_OPTIONS, tracingFromFlags } from './cli.ts';
