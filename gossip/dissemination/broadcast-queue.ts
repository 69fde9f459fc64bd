/**
 * The piggyback queue (memberlist's TransmitLimitedQueue): updates waiting to ride on outgoing
 * datagrams. Each is sent at most `retransmitMult × ceil(log10(n + 1))` times (memberlist's
 * retransmitLimit, util.go), which is what an epidemic needs to reach every one of n members with
 * high probability; the least-sent go first, newest first among equals, so fresh news overtakes
 * old. An update about the same member or key replaces the queued one (its name is the key), and
 * the queue holds at most `queueMax` updates: past that, the most-sent are dropped, since
 * push-pull repairs whatever piggybacks miss.
 */
import { assert } from '../../src/core/index.ts';

/** memberlist's retransmit limit for `members` members (util.go retransmitLimit). */
export function retransmitLimit(retransmitMult: number, members: number): number {
  return retransmitMult * Math.ceil(Math.log10(Math.max(1, members) + 1));
}

/** The smallest update there is (a `left` of a one-byte id): below this much room nothing fits. */
const UPDATE_BYTES_MIN = 1 + 2 + 4;
/**
 * A take gives up after this many queued updates that did not fit the room left: the datagram
 * is nearly full, and scanning a queue of hundreds for one that fits would cost more than the
 * next datagram carrying them.
 */
export const TAKE_SKIPS_MAX = 16;

interface Entry {
  name: string;
  bytes: Buffer;
  transmits: number;
  /** Enqueue order: higher is newer. */
  seq: number;
  live: boolean;
}

/** Options of the queue. */
export interface BroadcastQueueOptions {
  retransmitMult: number;
  queueMax: number;
}

/** A bounded, transmit-limited queue of encoded updates. */
export class BroadcastQueue {
  private readonly byName = new Map<string, Entry>();
  /** Entries by how often they were sent; each bucket in enqueue order (newest last). */
  private buckets: Entry[][] = [];
  private seq = 0;
  private droppedCount = 0;

  constructor(private readonly options: BroadcastQueueOptions) {
    assert(options.queueMax >= 1 && options.retransmitMult >= 1, 'bad broadcast queue options');
  }

  /** Updates waiting. */
  get size(): number {
    return this.byName.size;
  }

  /** Updates dropped because the queue was full. */
  get dropped(): number {
    return this.droppedCount;
  }

  /** Queues `bytes` under `name`, replacing what was queued under that name. */
  enqueue(name: string, bytes: Buffer): void {
    const old = this.byName.get(name);
    if (old) old.live = false;
    const e: Entry = { name, bytes, transmits: 0, seq: this.seq++, live: true };
    this.byName.set(name, e);
    (this.buckets[0] ??= []).push(e);
    if (this.byName.size > this.options.queueMax) this.evict();
  }

  /** True when an update is queued under `name`. */
  has(name: string): boolean {
    return this.byName.has(name);
  }

  /** Drops what is queued under `name`. */
  remove(name: string): void {
    const e = this.byName.get(name);
    if (!e) return;
    e.live = false;
    this.byName.delete(name);
  }

  /** Drops the most-sent, oldest entry. */
  private evict(): void {
    for (let t = this.buckets.length - 1; t >= 0; t--) {
      const bucket = this.buckets[t];
      if (!bucket) continue;
      for (const e of bucket) {
        if (!e.live) continue;
        e.live = false;
        this.byName.delete(e.name);
        this.droppedCount++;
        return;
      }
    }
  }

  /**
   * Takes updates that fit in `roomBytes` (at most `countMax`), least-sent and newest first, and
   * counts one transmission for each; those sent `retransmitLimit(members)` times leave the queue.
   */
  take(roomBytes: number, members: number, countMax: number): Buffer[] {
    const limit = retransmitLimit(this.options.retransmitMult, members);
    const out: Buffer[] = [];
    let room = roomBytes;
    const moved: Entry[] = [];
    let skips = 0;
    for (let t = 0; t < this.buckets.length && room >= UPDATE_BYTES_MIN && out.length < countMax && skips < TAKE_SKIPS_MAX; t++) {
      const bucket = this.buckets[t];
      if (!bucket || bucket.length === 0) continue;
      let dead = 0;
      for (let i = bucket.length - 1; i >= 0 && room >= UPDATE_BYTES_MIN && out.length < countMax && skips < TAKE_SKIPS_MAX; i--) {
        const e = bucket[i]!;
        if (!e.live) {
          dead++;
          continue;
        }
        if (e.bytes.length > room) {
          skips++;
          continue;
        }
        out.push(e.bytes);
        room -= e.bytes.length;
        e.live = false;
        dead++;
        moved.push(e);
      }
      // Compact lazily: a bucket is rebuilt only once dead entries are a good part of it.
      if (dead > 0 && dead * 4 >= bucket.length) this.buckets[t] = bucket.filter((e) => e.live);
    }
    for (const e of moved) {
      const transmits = e.transmits + 1;
      if (transmits >= limit) {
        if (this.byName.get(e.name)?.seq === e.seq) this.byName.delete(e.name);
        continue;
      }
      const next: Entry = { ...e, transmits, live: true };
      this.byName.set(e.name, next);
      insertBySeq((this.buckets[transmits] ??= []), next);
    }
    return out;
  }
}

/** Inserts `e` keeping `bucket` in enqueue order (oldest first). */
function insertBySeq(bucket: Entry[], e: Entry): void {
  let lo = 0;
  let hi = bucket.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (bucket[mid]!.seq < e.seq) lo = mid + 1;
    else hi = mid;
  }
  bucket.splice(lo, 0, e);
}
