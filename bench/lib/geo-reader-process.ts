/**
 * The remote reader of the geo benchmark, as its own process (`node --import tsx` this file, with
 * an IPC channel): it reads the remote region's copy (JetStream: an ordered consumer on B's
 * stream; edgeq: the binary consumer on the remote's brokers) and reports, for every record, its
 * id and the wall-clock time (performance.timeOrigin + now, comparable across processes on one
 * machine) it became readable. Its own process so the publisher's event loop in the bench never
 * delays a read or its timestamp (in one process, 2048 publishes in flight held arrivals back by
 * seconds and made the replication rate look higher than the publish rate).
 *
 * Protocol over IPC: parent → child: the `ReaderSpec` first, later `"stop"`; child → parent:
 * `{t: "ready"}` once reading, `{t: "a", d: [phase, seq, atMs, …]}` batches (phase -1: a payload
 * without an id), `{t: "err", m}` on a fatal error.
 */
import { connect as natsConnect } from 'nats';
import { createClient, type ConsumerRecord } from '../../src/client/index.ts';
import { decodePayload } from './geo-measure.ts';

/** What to read. */
export type ReaderSpec =
  | { kind: 'nats'; server: string; stream: string }
  | { kind: 'edgeq'; brokers: string[]; topic: string; originRegion: string };

/** Arrivals held before a batch is sent (triples): 3000 is ~24 KB of JSON-free numbers per message. */
const BATCH_TRIPLES_MAX = 3_000;
/** A partial batch waits at most this long, so a waiter in the parent hears of the last record quickly. */
const FLUSH_MS = 2;
/** Records one edgeq poll takes at most. */
const POLL_RECORDS_MAX = 50_000;
/** Consecutive failed edgeq polls before the reader gives up (each followed by POLL_RETRY_MS). */
const POLL_FAILURES_MAX = 50;
const POLL_RETRY_MS = 200;
/** Messages one pull of the ordered consumer asks for. */
const NATS_PULL_MAX = 1_000;

const wallMs = () => performance.timeOrigin + performance.now();
let batch: number[] = [];
let flushTimer: NodeJS.Timeout | null = null;
let stopping = false;

function send(msg: unknown): void {
  process.send?.(msg);
}

function flush(): void {
  if (flushTimer !== null) clearTimeout(flushTimer);
  flushTimer = null;
  if (batch.length === 0) return;
  send({ t: 'a', d: batch });
  batch = [];
}

function arrived(payload: Uint8Array, at: number): void {
  const id = decodePayload(payload);
  batch.push(id?.phase ?? -1, id?.seq ?? -1, at);
  if (batch.length >= BATCH_TRIPLES_MAX * 3) flush();
  else flushTimer ??= setTimeout(flush, FLUSH_MS);
}

async function readNats(spec: Extract<ReaderSpec, { kind: 'nats' }>, stop: Promise<void>): Promise<void> {
  const nc = await natsConnect({ servers: spec.server, name: 'geo-remote-reader' });
  // An ordered consumer from the first message: every record once, in order, as soon as the stream holds it.
  const consumer = await nc.jetstream().consumers.get(spec.stream);
  const messages = await consumer.consume({ max_messages: NATS_PULL_MAX });
  void stop.then(() => messages.stop());
  send({ t: 'ready' });
  for await (const m of messages) arrived(m.data, wallMs());
  await nc.close();
}

async function readEdgeq(spec: Extract<ReaderSpec, { kind: 'edgeq' }>): Promise<void> {
  const client = createClient({ brokers: spec.brokers, clientId: 'geo-remote-reader' });
  const consumer = client.consumer({ fromBeginning: true, maxWaitMs: 500, partitionFetchBytesMax: 4 * 1024 * 1024, fetchMaxBytes: 16 * 1024 * 1024, pollRecordsMax: POLL_RECORDS_MAX });
  consumer.assign([{ topic: spec.topic, partition: 0 }]);
  // Stopping is the `stopping` flag: the poll in progress ends within its 500 ms timeout.
  send({ t: 'ready' });
  let failures = 0;
  while (!stopping) {
    let records: ConsumerRecord[];
    try {
      records = await consumer.poll({ maxRecords: POLL_RECORDS_MAX, timeoutMs: 500 });
      failures = 0;
    } catch (err) {
      if (stopping) break;
      if (++failures >= POLL_FAILURES_MAX) throw err;
      process.stderr.write(`[bench:geo] edgeq reader: poll failed (${(err as Error).message}); retrying\n`);
      await new Promise((r) => setTimeout(r, POLL_RETRY_MS));
      continue;
    }
    const at = wallMs();
    for (const r of records) {
      // The exchange's records carry their origin (issue 13); only the origin's own count. A
      // record without the field (a client that does not return it yet) is matched by the id in
      // its payload alone: nobody else writes to this topic.
      const originRegion = (r as ConsumerRecord & { originRegion?: string | null }).originRegion;
      if (originRegion !== undefined && originRegion !== null && originRegion !== spec.originRegion) continue;
      if (r.value !== null) arrived(r.value, at);
    }
  }
  await client.close();
}

async function main(): Promise<void> {
  const spec = await new Promise<ReaderSpec>((resolve) => process.once('message', (m) => resolve(m as ReaderSpec)));
  const stop = new Promise<void>((resolve) =>
    process.on('message', (m) => {
      if (m === 'stop') {
        stopping = true;
        resolve();
      }
    }),
  );
  // The parent gone (its IPC channel closed) is a stop too: never outlive the bench.
  process.on('disconnect', () => process.exit(0));
  try {
    await (spec.kind === 'nats' ? readNats(spec, stop) : readEdgeq(spec));
    flush();
  } catch (err) {
    flush();
    send({ t: 'err', m: (err as Error).message });
  }
  process.disconnect?.();
}

await main();
