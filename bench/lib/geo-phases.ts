/**
 * The three measurements of the geo benchmark, written once against `GeoSystem` so edgeq and
 * JetStream go through the very same code: replication throughput over one link, origin-ack to
 * remote-readable lag at a fixed rate, and catch-up after a partition at a bandwidth limit.
 * Every phase is bounded in records and in time; waiting at the remote is an event (the arrival
 * log's waiter), never a sleep.
 */
import { EdgeqError } from '../../src/core/errors.ts';
import { progress, windowed } from './harness.ts';
import { ArrivalLog, catchupFigures, encodePayload, lagFigures, spanRate, type CatchupFigures, type LagFigures } from './geo-measure.ts';

/** A change to both directions of the link between the origin and the remote region. */
export interface GeoLinkChange {
  bandwidthBytesPerSec?: number;
  blackhole?: boolean;
}

/** One message size's origin publisher; the system's remote reader feeds the arrival log meanwhile. */
export interface GeoChannel {
  /** Publishes at the origin for throughput (batching allowed); resolves on the origin's ack. */
  publish(payload: Buffer): Promise<unknown>;
  /** Publishes at the origin for latency (no linger); resolves on the origin's ack. */
  publishOne(payload: Buffer): Promise<unknown>;
  /** The remote reader's fatal error, if it stopped on one. */
  readerError(): string | null;
  close(): Promise<void>;
}

/** A system under test: two regions joined by one emulated link. */
export interface GeoSystem {
  system: 'edgeq' | 'nats';
  /** The origin's and the remote's names, for messages and results. */
  origin: string;
  remote: string;
  /** What to say when nothing published at the origin ever becomes readable at the remote. */
  noArrivalHint: string;
  /** Prepares the stream/topic for `size`-byte records and starts the remote reader feeding `log`. */
  open(size: number, log: ArrivalLog): Promise<GeoChannel>;
  /** Changes both directions of the link. */
  setLink(change: GeoLinkChange): Promise<void>;
  /** Bytes forwarded so far across the link from the origin towards the remote. */
  bytesToRemote(): Promise<number>;
  /** What the system's own logs say about the run (e.g. link connections made and lost). */
  diagnostics?(): Promise<Record<string, unknown>>;
  close(): Promise<void>;
}

/** Bounds and rates of the measurements (the same for every system). */
export interface GeoSettings {
  replicateMsgs: number;
  /** Unanswered publishes at once in the throughput phase. */
  replicateWindow: number;
  replicateSecondsMax: number;
  lagRatePerSec: number;
  lagSeconds: number;
  lagWarmupSeconds: number;
  partitionSeconds: number;
  /** Publish rate at the origin while the link is cut. */
  catchupRatePerSec: number;
  bandwidthBytesPerSec: number;
  /** After publishing stops: the longest the replicate and lag phases wait for the remote. */
  remoteWaitSecondsMax: number;
  /** After the heal: the longest the catch-up phase waits for the remote to hold everything. */
  catchupWaitSecondsMax: number;
  /** The first record of a size: the longest it may take to become readable at the remote. */
  probeWaitSecondsMax: number;
}

/**
 * Publishes awaiting acks at a fixed rate, record i due at t0 + i/rate (open loop: a slow ack
 * does not delay the next record). More than this many unanswered means the system does not
 * hold the rate: the phase fails rather than queueing without bound.
 */
export const OPEN_LOOP_INFLIGHT_MAX = 20_000;

/** Wall-clock ms at sub-ms resolution: the reader process stamps arrivals on the same scale. */
const now = () => performance.timeOrigin + performance.now();
const tag = 'bench:geo';

/** Phase ids of one channel: 0 is the probe, then one per measurement. */
export class PhaseIds {
  private next = 1;
  take(): number {
    return this.next++;
  }
}

/** One record, and the wait until it is readable at the remote; throws a TIMEOUT naming the hint. */
export async function probe(sys: GeoSystem, ch: GeoChannel, log: ArrivalLog, size: number, s: GeoSettings): Promise<number> {
  const t0 = now();
  log.open(0, 1);
  await ch.publishOne(encodePayload(0, 0, size));
  const ok = await log.reached(0, s.probeWaitSecondsMax * 1000);
  log.close(0);
  if (!ok) {
    throw new EdgeqError('TIMEOUT', `a record acknowledged at ${sys.origin} was not readable at ${sys.remote} within ${s.probeWaitSecondsMax} s: ${sys.noArrivalHint}`, {
      details: { system: sys.system, messageBytes: size, waitSeconds: s.probeWaitSecondsMax },
    });
  }
  return Math.round(now() - t0);
}

/** What the throughput phase measured. */
export interface ReplicateFigures {
  replicateMsgsPerSec: number | null;
  /** Records readable at the remote per second from the first publish to the last arrival. */
  endToEndMsgsPerSec: number | null;
  /** From the first publish to the first record readable at the remote. */
  firstArrivalMs: number | null;
  /** Acks per second at the origin over the publishing. */
  originAckMsgsPerSec: number;
  published: number;
  arrived: number;
  duplicates: number;
  complete: boolean;
}

/** Publishes up to `replicateMsgs` as fast as the origin acks (bounded window); rate of first to last arrival at the remote. */
export async function replicate(ch: GeoChannel, log: ArrivalLog, ids: PhaseIds, size: number, s: GeoSettings): Promise<ReplicateFigures> {
  const phase = ids.take();
  log.open(phase, s.replicateMsgs);
  const t0 = now();
  const pub = await windowed(s.replicateMsgs, (i) => ch.publish(encodePayload(phase, i, size)), { window: s.replicateWindow, phaseSecondsMax: s.replicateSecondsMax });
  log.setTotal(phase, pub.done);
  const complete = await log.reached(phase, s.remoteWaitSecondsMax * 1000);
  const a = log.summary(phase);
  log.close(phase);
  return {
    replicateMsgsPerSec: spanRate(a.count, a.firstAtMs, a.lastAtMs),
    endToEndMsgsPerSec: a.count > 0 ? Math.round((a.count * 1000) / (a.lastAtMs - t0)) : null,
    firstArrivalMs: a.count > 0 ? Math.round(a.firstAtMs - t0) : null,
    originAckMsgsPerSec: Math.round(pub.rate), published: pub.done, arrived: a.count, duplicates: a.duplicates, complete };
}

/**
 * Sends `total` records at `ratePerSec`, record i due at t0 + i/rate, never early and without a
 * busy wait (a spinning generator would steal a core from the servers on this 2-core machine);
 * `onAck(i)` runs at each origin ack. Bounded by OPEN_LOOP_INFLIGHT_MAX unanswered.
 */
export async function openLoopPublish(send: (i: number) => Promise<unknown>, total: number, ratePerSec: number, onAck: (i: number) => void): Promise<void> {
  const t0 = now() + 20;
  let inflight = 0;
  let failed: unknown = null;
  let drained: (() => void) | null = null;
  for (let i = 0; i < total; i++) {
    const due = t0 + (i * 1000) / ratePerSec;
    while (now() < due) await new Promise((r) => setTimeout(r, Math.max(1, due - now())));
    if (failed !== null) throw failed;
    if (inflight >= OPEN_LOOP_INFLIGHT_MAX) {
      throw new EdgeqError('QUEUE_FULL', `more than ${OPEN_LOOP_INFLIGHT_MAX} publishes unanswered at ${ratePerSec}/s: the origin does not hold the rate`, { details: { ratePerSec, inflightMax: OPEN_LOOP_INFLIGHT_MAX } });
    }
    inflight++;
    send(i).then(
      () => {
        onAck(i);
        inflight--;
        if (inflight === 0) drained?.();
      },
      (err: unknown) => {
        failed = err;
        inflight--;
        if (inflight === 0) drained?.();
      },
    );
  }
  if (inflight > 0) await new Promise<void>((r) => (drained = r));
  if (failed !== null) throw failed;
}

/** What the lag phase measured. */
export type LagPhaseFigures = LagFigures & { ratePerSec: number; complete: boolean };

/** Origin-ack → remote-readable lag at `lagRatePerSec` (the warm-up's records not measured). */
export async function lag(ch: GeoChannel, log: ArrivalLog, ids: PhaseIds, size: number, s: GeoSettings): Promise<LagPhaseFigures> {
  const phase = ids.take();
  const warm = Math.round(s.lagRatePerSec * s.lagWarmupSeconds);
  const total = warm + Math.round(s.lagRatePerSec * s.lagSeconds);
  const ackMs = new Float64Array(total).fill(Number.NaN);
  log.open(phase, total);
  await openLoopPublish((i) => ch.publishOne(encodePayload(phase, i, size)), total, s.lagRatePerSec, (i) => (ackMs[i] = now()));
  const complete = await log.reached(phase, s.remoteWaitSecondsMax * 1000);
  const f = lagFigures(ackMs, (seq) => log.arrivalMs(phase, seq), warm);
  log.close(phase);
  return { ratePerSec: s.lagRatePerSec, ...f, complete };
}

/** What the catch-up phase measured. */
export interface CatchupPhaseFigures {
  bandwidthBytesPerSec: number;
  partitionSeconds: number;
  publishRatePerSec: number;
  /** Records published (and acknowledged at the origin) while the link was cut. */
  backlog: number;
  /** Records readable at the remote before the heal (0 when the cut holds). */
  arrivedBeforeHeal: number;
  /** Nothing of the backlog reached the remote before the heal: the figures measure a catch-up. */
  cutHeld: boolean;
  /** Bytes forwarded towards the remote while the link was cut (0 when the cut holds) and from the heal to the end. */
  wireBytesDuringCut: number;
  wireBytesAfterHeal: number;
  /** Records read at the remote more than once (a redelivery the remote's reader saw). */
  duplicates: number;
  complete: boolean;
  figures: CatchupFigures | null;
}

/**
 * Limits the link to `bandwidthBytesPerSec`, cuts it both ways for `partitionSeconds` while the
 * origin takes `catchupRatePerSec`, heals, and rates the records readable at the remote from the
 * heal until it holds them all. Publishing stops at the heal, so "all" is a fixed backlog. The
 * link is restored (no cut, unlimited) whatever happens.
 */
export async function catchup(sys: GeoSystem, ch: GeoChannel, log: ArrivalLog, ids: PhaseIds, size: number, s: GeoSettings): Promise<CatchupPhaseFigures> {
  const phase = ids.take();
  const total = Math.round(s.catchupRatePerSec * s.partitionSeconds);
  log.open(phase, total);
  try {
    await sys.setLink({ bandwidthBytesPerSec: s.bandwidthBytesPerSec });
    await sys.setLink({ blackhole: true });
    const bytesAtCut = await sys.bytesToRemote();
    progress(`${sys.system} ${size} B: link ${sys.origin}↔${sys.remote} cut for ${s.partitionSeconds} s, publishing ${s.catchupRatePerSec}/s at ${sys.origin}`, tag);
    await openLoopPublish((i) => ch.publishOne(encodePayload(phase, i, size)), total, s.catchupRatePerSec, () => undefined);
    const arrivedBeforeHeal = log.summary(phase).count;
    const bytes0 = await sys.bytesToRemote();
    const healAtMs = now();
    await sys.setLink({ blackhole: false });
    const complete = await log.reached(phase, s.catchupWaitSecondsMax * 1000);
    const bytes1 = await sys.bytesToRemote();
    const after = log.since(phase, healAtMs);
    const { duplicates } = log.summary(phase);
    const figures = after.count === 0 ? null : catchupFigures({ records: after.count, healAtMs, lastAtMs: after.lastAtMs, messageBytes: size, wireBytes: bytes1 - bytes0, bandwidthBytesPerSec: s.bandwidthBytesPerSec });
    return { bandwidthBytesPerSec: s.bandwidthBytesPerSec, partitionSeconds: s.partitionSeconds, publishRatePerSec: s.catchupRatePerSec, backlog: total, arrivedBeforeHeal, cutHeld: arrivedBeforeHeal === 0, wireBytesDuringCut: bytes0 - bytesAtCut, wireBytesAfterHeal: bytes1 - bytes0, duplicates, complete, figures };
  } finally {
    log.close(phase);
    await sys.setLink({ blackhole: false, bandwidthBytesPerSec: 0 });
  }
}
