/**
 * The pure half of the geo benchmark (`bench/geo-bench.ts`): the record id carried in each
 * payload, the log of when each record became readable at the remote region, and the arithmetic
 * that turns origin-ack and arrival times into rates and lag percentiles. No sockets, no clocks:
 * every time is passed in, so the matching and the figures are tested on their own.
 */
import * as hdr from 'hdr-histogram-js';
import { EdgeqError } from '../../src/core/errors.ts';

/** Bytes at the start of every payload: the phase (uint32 BE) and the record's sequence in it (uint32 BE). */
export const GEO_ID_BYTES = 8;
/** Records one phase may expect: 10 M × 8 bytes of arrival times is 80 MB, the most this bench holds. */
export const GEO_PHASE_RECORDS_MAX = 10_000_000;
/** Phases one log keeps at once (one per measurement, a few per message size). */
export const GEO_PHASES_MAX = 64;

/** A payload of `size` bytes: the id, then filler. */
export function encodePayload(phase: number, seq: number, size: number): Buffer {
  if (size < GEO_ID_BYTES) throw new EdgeqError('INVALID_ARGUMENT', `a geo payload holds an ${GEO_ID_BYTES}-byte id: size must be at least ${GEO_ID_BYTES}, got ${size}`, { details: { field: 'size' } });
  const b = Buffer.alloc(size, 0x61);
  b.writeUInt32BE(phase, 0);
  b.writeUInt32BE(seq, 4);
  return b;
}

/** The id of a payload, or null for one too short to carry it (not ours). */
export function decodePayload(payload: Uint8Array): { phase: number; seq: number } | null {
  if (payload.length < GEO_ID_BYTES) return null;
  const v = new DataView(payload.buffer, payload.byteOffset, GEO_ID_BYTES);
  return { phase: v.getUint32(0), seq: v.getUint32(4) };
}

interface Phase {
  /** Arrival time (ms) of each seq; NaN until it arrives. */
  at: Float64Array;
  /** How many records the phase will have in the end (≤ at.length); set once publishing stopped. */
  total: number;
  count: number;
  duplicates: number;
  firstAtMs: number;
  lastAtMs: number;
  waiters: { count: number; resolve: () => void }[];
}

/** One phase's arrivals as reported. */
export interface PhaseArrivals {
  count: number;
  total: number;
  duplicates: number;
  firstAtMs: number;
  lastAtMs: number;
}

/**
 * When each record of each phase became readable at the remote region. The remote reader calls
 * `record` for every payload it reads; a measurement awaits `reached` (an event, not a poll).
 */
export class ArrivalLog {
  private readonly phases = new Map<number, Phase>();
  /** Payloads of no open phase (an earlier phase's strays, or foreign records). */
  strays = 0;

  /** Opens `phase` for up to `capacity` records. */
  open(phase: number, capacity: number): void {
    if (!Number.isSafeInteger(capacity) || capacity < 1 || capacity > GEO_PHASE_RECORDS_MAX) {
      throw new EdgeqError('INVALID_ARGUMENT', `a phase holds 1..${GEO_PHASE_RECORDS_MAX} records, got ${capacity}`, { details: { field: 'capacity' } });
    }
    if (this.phases.size >= GEO_PHASES_MAX) throw new EdgeqError('QUEUE_FULL', `an arrival log keeps at most ${GEO_PHASES_MAX} phases`, { details: { phasesMax: GEO_PHASES_MAX } });
    if (this.phases.has(phase)) throw new EdgeqError('INVALID_ARGUMENT', `phase ${phase} is already open`, { details: { field: 'phase' } });
    this.phases.set(phase, { at: new Float64Array(capacity).fill(NaN), total: capacity, count: 0, duplicates: 0, firstAtMs: NaN, lastAtMs: NaN, waiters: [] });
  }

  /** Records that the payload was readable at the remote at `atMs`; duplicates are counted, not re-timed. */
  record(payload: Uint8Array, atMs: number): void {
    const id = decodePayload(payload);
    if (id === null) this.strays++;
    else this.recordId(id.phase, id.seq, atMs);
  }

  /** `record` for an id already decoded (the reader process sends ids); a phase of -1 is a stray. */
  recordId(phase: number, seq: number, atMs: number): void {
    const p = this.phases.get(phase);
    if (p === undefined || seq < 0 || seq >= p.at.length) {
      this.strays++;
      return;
    }
    if (!Number.isNaN(p.at[seq]!)) {
      p.duplicates++;
      return;
    }
    p.at[seq] = atMs;
    p.count++;
    if (Number.isNaN(p.firstAtMs) || atMs < p.firstAtMs) p.firstAtMs = atMs;
    if (Number.isNaN(p.lastAtMs) || atMs > p.lastAtMs) p.lastAtMs = atMs;
    this.wake(p);
  }

  /** Sets how many records the phase will have (publishing stopped early: fewer than its capacity). */
  setTotal(phase: number, total: number): void {
    const p = this.get(phase);
    if (!Number.isSafeInteger(total) || total < 0 || total > p.at.length) throw new EdgeqError('INVALID_ARGUMENT', `total must be within 0..${p.at.length}, got ${total}`, { details: { field: 'total' } });
    p.total = total;
    this.wake(p);
  }

  /** Resolves true once `count` records of the phase arrived (default: its total), false after `timeoutMs`. */
  reached(phase: number, timeoutMs: number, count?: number): Promise<boolean> {
    const p = this.get(phase);
    const want = count ?? p.total;
    if (p.count >= want) return Promise.resolve(true);
    return new Promise((resolve) => {
      const waiter = { count: want, resolve: () => (clearTimeout(timer), resolve(true)) };
      const timer = setTimeout(() => {
        p.waiters = p.waiters.filter((w) => w !== waiter);
        resolve(false);
      }, timeoutMs);
      p.waiters.push(waiter);
    });
  }

  /** Arrival time of one record, NaN if it has not arrived. */
  arrivalMs(phase: number, seq: number): number {
    return this.get(phase).at[seq] ?? NaN;
  }

  /** Arrivals of a phase after `sinceMs` (inclusive) and the last of them. */
  since(phase: number, sinceMs: number): { count: number; lastAtMs: number } {
    const p = this.get(phase);
    let count = 0;
    let lastAtMs = NaN;
    for (let i = 0; i < p.total; i++) {
      const t = p.at[i]!;
      if (t >= sinceMs) {
        count++;
        if (Number.isNaN(lastAtMs) || t > lastAtMs) lastAtMs = t;
      }
    }
    return { count, lastAtMs };
  }

  summary(phase: number): PhaseArrivals {
    const p = this.get(phase);
    return { count: p.count, total: p.total, duplicates: p.duplicates, firstAtMs: p.firstAtMs, lastAtMs: p.lastAtMs };
  }

  /** Frees a phase's arrays; its later strays are counted as strays. */
  close(phase: number): void {
    this.phases.delete(phase);
  }

  private get(phase: number): Phase {
    const p = this.phases.get(phase);
    if (p === undefined) throw new EdgeqError('NOT_FOUND', `phase ${phase} is not open`, { details: { phase } });
    return p;
  }

  private wake(p: Phase): void {
    if (p.waiters.length === 0) return;
    const ready = p.waiters.filter((w) => p.count >= Math.min(w.count, p.total));
    p.waiters = p.waiters.filter((w) => !ready.includes(w));
    for (const w of ready) w.resolve();
  }
}

/** Records per second from the first to the last arrival; null with fewer than two. */
export function spanRate(count: number, firstAtMs: number, lastAtMs: number): number | null {
  if (count < 2 || !(lastAtMs > firstAtMs)) return null;
  return Math.round(((count - 1) * 1000) / (lastAtMs - firstAtMs));
}

/** Lag percentiles of a fixed-rate phase, and how many records never arrived. */
export interface LagFigures {
  p50Ms: number;
  p99Ms: number;
  p999Ms: number;
  maxMs: number;
  /** Records measured (acknowledged and arrived, after the warm-up). */
  measured: number;
  /** Acknowledged records after the warm-up that never arrived within the wait. */
  missing: number;
}

/**
 * Origin-ack-to-remote-readable lag of records `fromSeq..ackMs.length-1`: arrival − ack, floored
 * at 0 (a reader may see a record before the publisher's ack travelled back to it). Records
 * without an ack (NaN) are skipped; acknowledged records that never arrived count as missing.
 */
export function lagFigures(ackMs: Float64Array, arrivalMs: (seq: number) => number, fromSeq: number): LagFigures {
  const h = hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 600_000_000, numberOfSignificantValueDigits: 3 });
  let measured = 0;
  let missing = 0;
  for (let seq = fromSeq; seq < ackMs.length; seq++) {
    const ack = ackMs[seq]!;
    if (Number.isNaN(ack)) continue;
    const at = arrivalMs(seq);
    if (Number.isNaN(at)) {
      missing++;
      continue;
    }
    // Microseconds; at least 1 (the histogram's lowest value).
    h.recordValue(Math.max(1, Math.round(Math.max(0, at - ack) * 1000)));
    measured++;
  }
  const ms = (us: number) => Math.round(us) / 1000;
  const out = measured === 0
    ? { p50Ms: NaN, p99Ms: NaN, p999Ms: NaN, maxMs: NaN, measured, missing }
    : { p50Ms: ms(h.getValueAtPercentile(50)), p99Ms: ms(h.getValueAtPercentile(99)), p999Ms: ms(h.getValueAtPercentile(99.9)), maxMs: ms(h.maxValue), measured, missing };
  h.destroy();
  return out;
}

/** Catch-up after a heal, as reported. */
export interface CatchupFigures {
  /** Records that arrived after the heal. */
  records: number;
  seconds: number;
  msgsPerSec: number;
  /** Payload bytes per second (records × message size). */
  payloadBytesPerSec: number;
  /** Bytes per second that crossed the link towards the remote (payload plus each system's framing). */
  wireBytesPerSec: number;
  /** Wire bytes per second over the link's bandwidth limit. */
  wireFractionOfLimit: number;
  /** Payload bytes per second over the link's bandwidth limit. */
  payloadFractionOfLimit: number;
}

/** Catch-up figures from the heal time, the last arrival, the count and the link's byte counter delta. */
export function catchupFigures(o: { records: number; healAtMs: number; lastAtMs: number; messageBytes: number; wireBytes: number; bandwidthBytesPerSec: number }): CatchupFigures {
  const seconds = (o.lastAtMs - o.healAtMs) / 1000;
  if (!(seconds > 0) || o.records === 0) throw new EdgeqError('INVALID_ARGUMENT', `catch-up needs records arriving after the heal (records ${o.records}, ${seconds} s)`, { details: { field: 'records' } });
  const msgsPerSec = o.records / seconds;
  const payloadBytesPerSec = msgsPerSec * o.messageBytes;
  const wireBytesPerSec = o.wireBytes / seconds;
  const r3 = (x: number) => Math.round(x * 1000) / 1000;
  return {
    records: o.records,
    seconds: r3(seconds),
    msgsPerSec: Math.round(msgsPerSec),
    payloadBytesPerSec: Math.round(payloadBytesPerSec),
    wireBytesPerSec: Math.round(wireBytesPerSec),
    wireFractionOfLimit: r3(wireBytesPerSec / o.bandwidthBytesPerSec),
    payloadFractionOfLimit: r3(payloadBytesPerSec / o.bandwidthBytesPerSec),
  };
}
