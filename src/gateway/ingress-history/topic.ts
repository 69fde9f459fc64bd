/**
 * `__ingress_history` through the gateway's client (GATEWAY_CLIENT_ID, the only client the broker
 * lets create and write it): the topic made ready, the appender of steps and the source that
 * reads them back. One partition, the cell's default replication, `retention.ms` = the
 * configured retention; a local topic (never `scope=global`: a region's history is its own).
 */
import { silentLogger, type Logger } from '../../core/index.ts';
import { INGRESS_HISTORY_TOPIC } from '../../broker/index.ts';
import type { Admin, Consumer, Producer } from '../../client/index.ts';
import { encodeIngressStep } from './codec.ts';
import { READ_BACK_RECORDS_MAX, type HistoryRecord, type HistorySource } from './history.ts';
import type { StepAppender } from './recorder.ts';

export { INGRESS_HISTORY_TOPIC };

/** Records one poll of the history hands over (a read-back goes in many polls). */
export const HISTORY_POLL_RECORDS_MAX = 5_000;
/** Bound on one append of steps, retries included: past it the steps wait for the next try. */
export const APPEND_DELIVERY_MS = 10_000;

/**
 * Creates the topic when absent; when its retention is not the configured one, alters it (so
 * the flag is honoured after a restart) through `alterRetention` when the cell offers it.
 */
export async function ensureHistoryTopic(
  admin: Admin,
  o: { retentionMs: number; logger?: Logger; alterRetention?: (topic: string, retentionMs: number) => Promise<void> },
): Promise<void> {
  const logger = o.logger ?? silentLogger;
  await admin.createTopics([{ name: INGRESS_HISTORY_TOPIC, partitions: 1, config: { 'retention.ms': String(o.retentionMs) } }], { ifNotExists: true });
  const [d] = await admin.describeTopics([INGRESS_HISTORY_TOPIC]);
  const current = d?.config['retention.ms'];
  if (current === String(o.retentionMs)) return;
  if (o.alterRetention) {
    await o.alterRetention(INGRESS_HISTORY_TOPIC, o.retentionMs);
    logger.info({ from: current, to: o.retentionMs }, 'ingress history retention changed');
  } else {
    logger.warn({ topic: INGRESS_HISTORY_TOPIC, retentionMs: current, configured: o.retentionMs }, 'the topic keeps its retention: the history is cut at the configured one in memory');
  }
}

/** Writes steps with one produce (acks=all, idempotent: a retried append does not duplicate). */
export function topicAppender(producer: Producer): StepAppender {
  return async (steps) => {
    if (steps.length === 0) return;
    await producer.send(INGRESS_HISTORY_TOPIC, steps.map((s) => encodeIngressStep(s)), { partition: 0 });
  };
}

/** Reads the topic from its start (the newest READ_BACK_RECORDS_MAX records) and then tails it. */
export function topicSource(o: { admin: Admin; consumer: Consumer; retentionMs: number; logger?: Logger; alterRetention?: (topic: string, retentionMs: number) => Promise<void> }): HistorySource {
  let endAtOpen = 0;
  let next = 0;
  let opened = false;
  return {
    async open() {
      await ensureHistoryTopic(o.admin, o);
      const [earliest] = await o.admin.listOffsets(INGRESS_HISTORY_TOPIC, { spec: 'earliest' });
      const [latest] = await o.admin.listOffsets(INGRESS_HISTORY_TOPIC, { spec: 'latest' });
      endAtOpen = latest?.offset ?? 0;
      next = Math.max(earliest?.offset ?? 0, endAtOpen - READ_BACK_RECORDS_MAX);
      if (!opened) o.consumer.assign([{ topic: INGRESS_HISTORY_TOPIC, partition: 0 }]);
      opened = true;
      o.consumer.seek(INGRESS_HISTORY_TOPIC, 0, next);
    },
    async poll(waitMs) {
      const got = await o.consumer.poll({ timeoutMs: waitMs, maxRecords: HISTORY_POLL_RECORDS_MAX });
      const records: HistoryRecord[] = [];
      for (const r of got) {
        records.push({ key: r.key, value: r.value });
        next = r.offset + 1;
      }
      return { records, caughtUp: next >= endAtOpen };
    },
    async close() {
      await o.consumer.close();
    },
  };
}
