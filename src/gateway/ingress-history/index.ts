/**
 * The ingress history of a region (issue 15): each gateway's recorder writes its steps to the
 * internal local topic `__ingress_history`; the history reads every gateway's steps back and
 * answers the region's, for the planner. See docs/flow-control.md, "Ingress history".
 */
export { encodeIngressStep, decodeIngressStep, INGRESS_STEP_CODEC_VERSION, INGRESS_STEP_VALUE_BYTES, INGRESS_MEMBER_BYTES_MAX, type IngressStepRecord } from './codec.ts';
export { IngressRecorder, sampleMsOf, PENDING_STEPS_MAX, APPEND_STEPS_MAX, APPEND_RETRY_MS, SAMPLE_MS_MAX, type IngressRecorderOptions, type IngressTotals, type StepAppender } from './recorder.ts';
export {
  IngressHistory,
  HISTORY_STEPS_MAX,
  GATEWAYS_PER_STEP_MAX,
  READ_BACK_RECORDS_MAX,
  SOURCE_RETRY_MS_MIN,
  SOURCE_RETRY_MS_MAX,
  TAIL_POLL_MS,
  type HistoryRecord,
  type HistorySource,
  type IngressHistoryOptions,
} from './history.ts';
export { ensureHistoryTopic, topicAppender, topicSource, INGRESS_HISTORY_TOPIC, HISTORY_POLL_RECORDS_MAX, APPEND_DELIVERY_MS } from './topic.ts';
export { ingressHistorySettings, INGRESS_STEP_MS_DEFAULT, INGRESS_STEP_MS_MIN, INGRESS_STEP_MS_MAX, INGRESS_RETENTION_MS_DEFAULT, INGRESS_RETENTION_STEPS_MIN, type IngressHistorySettings } from './settings.ts';
export { registerIngressHistoryMetrics } from './metrics.ts';
