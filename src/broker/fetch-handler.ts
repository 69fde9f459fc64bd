/**
 * Fetch with long polling: answer at once when `minBytes` are ready, otherwise wait for appends to
 * any of the requested partitions (not a timer loop) until enough bytes arrived or `maxWaitMs`
 * passed. Bytes are the stored batches, sent as they are on disk.
 *
 * A consumer fetch of a global topic may name an origin region (origin-fetch.ts): it then gets
 * only that origin's batches, from a scan bounded by its byte limit, and where the scan stopped.
 */
import { EdgeqError, isEdgeqError, systemClock, type Clock } from '../core/index.ts';
import { OFFSET_RECORD_COUNT, batchSizeAt } from '../log/index.ts';
import { originCursorsOf, readOrigin, resolveOriginStart } from './origin-fetch.ts';
import { FETCH_OFFSET_CONTINUE, FetchSessions, type SessionPosition, type SessionTurn } from './fetch-sessions.ts';
import { readBatchHeader, splitBatches } from '../log/index.ts';
import type { BrokerMetrics } from '../metrics/index.ts';
import { wireError, type FetchPartitionResult, type FetchRequest, type FetchResponse } from '../protocol/index.ts';
import type { Partition } from './partition.ts';
import type { TopicManager } from './topic-manager.ts';

/** Bounds of fetch handling. */
export interface FetchLimits {
  /** Longest a fetch may wait for data. */
  fetchWaitMsMax: number;
  /** Largest response: the sum over partitions (the first batch is always sent, to make progress). */
  fetchBytesMax: number;
  /** Partitions in one fetch. */
  fetchPartitionsMax: number;
}

export const FETCH_LIMITS_DEFAULT: FetchLimits = { fetchWaitMsMax: 30_000, fetchBytesMax: 8 * 1024 * 1024, fetchPartitionsMax: 1000 };

interface Slot {
  topic: string;
  partitionIndex: number;
  partition: Partition | null;
  offset: number;
  maxBytes: number;
  epoch: number | null | undefined;
  /** The origin filter (global topics, consumers): only this region's batches. */
  origin: string | null;
  /** With `origin`: batches whose origin offsets are all at or below this are skipped. */
  afterOriginOffset: number;
  /** Set when a follower's fetch failed the leader's checks: answered as this error, not read. */
  refused?: FetchPartitionResult['error'];
  /** With `origin`: the fetch session this slot takes a turn in. */
  session: string | null;
  /** What was answered for this slot (a session's next turn starts where it ended). */
  result?: FetchPartitionResult;
}

/** Handles one Fetch request; `onClose` tells when the connection goes away (stop waiting). */
export async function handleFetch(
  req: FetchRequest,
  deps: {
    topics: TopicManager;
    limits: FetchLimits;
    clock?: Clock;
    onClose?: (listener: () => void) => () => void;
    metrics?: BrokerMetrics;
    /** This broker's region: the origin of its own writes in a global topic. */
    region?: string;
    /** Origin-fetch sessions of this broker (fetch_offset -2). */
    sessions?: FetchSessions;
    /** The connection the fetch came on: its sessions are its own (RequestContext.connectionId). */
    connectionId?: number;
  },
): Promise<FetchResponse> {
  const slots: Slot[] = [];
  for (const t of req.topics) {
    for (const fp of t.partitions) {
      let partition: Partition | null = null;
      let refused: Slot['refused'];
      try {
        deps.topics.checkTopicId(t.name, t.topicId);
        partition = deps.topics.partition(t.name, fp.partition);
      } catch (err) {
        partition = null;
        if (isEdgeqError(err, 'UNKNOWN_TOPIC_ID')) refused = wireError(err);
      }
      slots.push({
        topic: t.name,
        partitionIndex: fp.partition,
        partition,
        offset: fp.fetchOffset,
        maxBytes: fp.maxBytes,
        epoch: fp.currentLeaderEpoch,
        origin: fp.origin ?? null,
        afterOriginOffset: fp.afterOriginOffset ?? -1,
        session: fp.origin && fp.session ? fp.session : null,
        ...(refused ? { refused } : {}),
      });
    }
  }
  if (slots.length > deps.limits.fetchPartitionsMax) {
    throw new EdgeqError('INVALID_REQUEST', `fetch names ${slots.length} partitions, the limit is ${deps.limits.fetchPartitionsMax}`);
  }
  // Session turns are taken now, before anything is awaited: in the order the fetches arrived.
  const turns: [Slot, SessionTurn][] = [];
  for (const s of slots) {
    if (s.session === null) continue;
    if (!deps.sessions) {
      s.refused = wireError(new EdgeqError('INVALID_REQUEST', 'this broker keeps no fetch sessions'));
      continue;
    }
    turns.push([s, deps.sessions.enter(deps.connectionId ?? 0, s.session)]);
  }
  if (turns.length === 0) return serveFetch(req, slots, deps);
  try {
    for (const [s, turn] of turns) {
      const prev = await turn.previous;
      if (s.offset !== FETCH_OFFSET_CONTINUE) continue;
      try {
        const pos = FetchSessions.continueFrom(s.session!, prev, { topic: s.topic, partition: s.partitionIndex, origin: s.origin ?? '' });
        s.offset = pos.next;
        s.afterOriginOffset = Math.max(s.afterOriginOffset, pos.after);
      } catch (err) {
        s.refused = wireError(err);
      }
    }
    const res = await serveFetch(req, slots, deps);
    for (const [s, turn] of turns) turn.finish(sessionEnd(s));
    return res;
  } catch (err) {
    for (const [, turn] of turns) turn.finish(undefined);
    throw err;
  }
}

/** Where a session's next fetch starts after this slot's answer; undefined when it failed. */
function sessionEnd(s: Slot): SessionPosition | undefined {
  const r = s.result;
  if (!r || r.error || s.origin === null) return undefined;
  let after = s.afterOriginOffset;
  const buf = Buffer.isBuffer(r.records) ? r.records : Buffer.from(r.records.buffer, r.records.byteOffset, r.records.byteLength);
  for (const b of splitBatches(buf)) {
    const h = readBatchHeader(b);
    if (h.originRegion === s.origin) after = Math.max(after, h.originOffset + h.lastOffsetDelta);
  }
  const next = (r.scannedTo ?? -1) >= 0 ? r.scannedTo! : s.offset;
  return { topic: s.topic, partition: s.partitionIndex, origin: s.origin, next, after };
}

async function serveFetch(req: FetchRequest, slots: Slot[], deps: Parameters<typeof handleFetch>[1]): Promise<FetchResponse> {
  const clock = deps.clock ?? systemClock;
  const region = deps.region ?? 'local';
  const replicaId = req.replicaId ?? -1;
  const maxWaitMs = Math.min(Math.max(0, req.maxWaitMs ?? 0), deps.limits.fetchWaitMsMax);
  const minBytes = Math.max(0, req.minBytes ?? 0);
  const maxBytes = Math.min(req.maxBytes || deps.limits.fetchBytesMax, deps.limits.fetchBytesMax);
  const deadline = clock.monotonicMs() + maxWaitMs;

  // A follower's fetch offset is its log end: the leader learns from it how far the follower got.
  // The partition checks the claim (epoch, membership, range) before it counts; a slot whose
  // claim fails answers that error and is not read.
  if (replicaId >= 0) {
    for (const s of slots) {
      if (!s.partition) continue;
      try {
        s.partition.recordFollowerFetch(replicaId, s.offset, s.epoch);
      } catch (err) {
        s.refused = wireError(err);
      }
    }
  }
  for (;;) {
    const results = await readAll(slots, maxBytes, replicaId >= 0, region);
    const bytes = results.reduce((n, r) => n + r.records.length, 0);
    const anyError = results.some((r) => r.error);
    const remaining = deadline - clock.monotonicMs();
    // An origin scan that found nothing but stopped below the HW (its byte bound) answers now,
    // so the caller continues from scanned_to instead of waiting on a log of other origins.
    const moreToScan = slots.some((s, i) => s.origin !== null && !results[i]!.error && results[i]!.records.length === 0 && (results[i]!.scannedTo ?? -1) < results[i]!.highWatermark);
    if (bytes >= Math.max(1, minBytes) || anyError || remaining <= 0 || minBytes === 0 || moreToScan) {
      return answer(slots, results, replicaId >= 0, deps.metrics);
    }
    // An origin slot that scanned to the HW without a match continues from there when woken: the
    // batches it passed are not read again.
    slots.forEach((s, i) => {
      if (s.origin !== null && (results[i]!.scannedTo ?? -1) >= 0) s.offset = results[i]!.scannedTo!;
    });
    const woke = await waitForAppend(slots, remaining, clock, deps.onClose);
    if (!woke) return answer(slots, await readAll(slots, maxBytes, replicaId >= 0, region), replicaId >= 0, deps.metrics);
  }
}

async function readAll(slots: Slot[], maxBytesTotal: number, replica: boolean, region: string): Promise<FetchPartitionResult[]> {
  let budget = maxBytesTotal;
  const out: FetchPartitionResult[] = [];
  for (const s of slots) {
    const r: FetchPartitionResult = {
      partition: s.partitionIndex,
      highWatermark: -1,
      logStartOffset: -1,
      logEndOffset: -1,
      records: Buffer.alloc(0),
      leaderEpoch: -1,
      scannedTo: -1,
    };
    try {
      if (!s.partition && s.refused) {
        r.error = s.refused;
        out.push(r);
        continue;
      }
      if (!s.partition) {
        throw new EdgeqError('UNKNOWN_TOPIC_OR_PARTITION', `${s.topic}-${s.partitionIndex} does not exist`, {
          details: { topic: s.topic, partition: s.partitionIndex },
        });
      }
      const p = s.partition;
      r.highWatermark = p.highWatermark;
      r.logStartOffset = p.logStartOffset;
      r.logEndOffset = p.logEndOffset;
      r.leaderEpoch = p.leaderEpoch;
      if (p.settings.scope === 'global') {
        r.originCursors = originCursorsOf(p, region);
        const ownDeleted = p.origins.ownDeletedUpTo();
        r.originDeletedUpTo = { ...p.origins.deletedUpTo(), ...(ownDeleted >= 0 ? { [region]: ownDeleted } : {}) };
      }
      if (s.refused) {
        // The marks still go with the refusal: a follower behind the log start resets by them.
        r.error = s.refused;
        out.push(r);
        continue;
      }
      if (!Number.isSafeInteger(s.offset) || s.maxBytes < 1) {
        throw new EdgeqError('INVALID_REQUEST', `bad fetch position offset=${s.offset} maxBytes=${s.maxBytes}`);
      }
      if (s.origin !== null && replica) {
        throw new EdgeqError('INVALID_REQUEST', `${s.topic}-${s.partitionIndex}: a replica fetch copies the whole log and takes no origin filter`);
      }
      // Once the budget is spent, later partitions answer empty (but still with their marks).
      if (budget > 0 || out.every((o) => o.records.length === 0)) {
        const bound = Math.max(1, Math.min(s.maxBytes, budget));
        if (s.origin !== null) {
          const start = resolveOriginStart(p, { topic: s.topic, offset: s.offset, origin: s.origin, afterOriginOffset: s.afterOriginOffset }, region);
          const read = await readOrigin(p, { offset: start, maxBytes: bound, leaderEpoch: s.epoch, origin: s.origin, afterOriginOffset: s.afterOriginOffset }, region);
          r.records = read.records;
          r.scannedTo = read.scannedTo;
          // The scan, matching or not, is what the bound is about.
          budget -= read.scannedBytes;
        } else {
          const read = await p.read(s.offset, bound, { leaderEpoch: s.epoch, replica });
          r.records = read.bytes;
          r.scannedTo = read.nextOffset;
          budget -= read.bytes.length;
        }
      }
    } catch (err) {
      r.error = wireError(err);
    }
    out.push(r);
  }
  return out;
}

/** The response, counted once it is final (a long poll's earlier empty reads are not). */
function answer(slots: Slot[], results: FetchPartitionResult[], replica: boolean, metrics: BrokerMetrics | undefined): FetchResponse {
  slots.forEach((s, i) => (s.result = results[i]));
  if (metrics) {
    let records = 0;
    let bytes = 0;
    for (const r of results) {
      bytes += r.records.length;
      records += recordCount(r.records);
    }
    metrics.recordFetch(records, bytes, replica);
  }
  return { topics: group(slots, results) };
}

/**
 * Records in stored batches, from each batch header's record count: a walk over headers, no
 * decoding. A torn tail (never sent: reads end on batch boundaries) stops the count.
 */
function recordCount(bytes: Uint8Array): number {
  const buf = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let n = 0;
  for (let pos = 0; pos + OFFSET_RECORD_COUNT + 4 <= buf.length; ) {
    const size = batchSizeAt(buf, pos);
    if (size <= 0 || pos + size > buf.length) break;
    n += buf.readInt32BE(pos + OFFSET_RECORD_COUNT);
    pos += size;
  }
  return n;
}

function group(slots: Slot[], results: FetchPartitionResult[]): FetchResponse['topics'] {
  const byTopic = new Map<string, FetchPartitionResult[]>();
  slots.forEach((s, i) => {
    let list = byTopic.get(s.topic);
    if (!list) byTopic.set(s.topic, (list = []));
    list.push(results[i]!);
  });
  return [...byTopic].map(([name, partitions]) => ({ name, partitions }));
}

/**
 * Resolves true on an append to any slot's partition, false on timeout or connection close. Every
 * listener it adds (partitions, timer, connection) is removed when it resolves.
 */
function waitForAppend(slots: Slot[], ms: number, clock: Clock, onClose?: (listener: () => void) => () => void): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const offs: (() => void)[] = [];
    let done = false;
    const finish = (v: boolean) => {
      if (done) return;
      done = true;
      timer.cancel();
      for (const off of offs) off();
      resolve(v);
    };
    const timer = clock.setTimeout(() => finish(false), ms);
    for (const s of slots) if (s.partition) offs.push(s.partition.onChange(() => finish(true)));
    if (onClose) offs.push(onClose(() => finish(false)));
  });
}
