/**
 * The versioned state every member converges to: key → value (bytes or JSON), each entry with
 * its version (hybrid logical clock), the member that wrote it and whether it is a deletion.
 * Last writer wins on (version, member), so applying the same entries in any order, any number
 * of times, ends in the same state everywhere. A deletion is a tombstone that wins like a write
 * and is purged `tombstoneRetainMs` after it was written (by the writer's clock, so members purge
 * it at about the same time); a member cut off for longer than that can bring the old value back,
 * which is the price of a bounded store.
 *
 * Bounded: entries (tombstones included), bytes per value, total bytes of keys and values. A
 * local write over a bound is a typed error and changes nothing; a learned entry over a bound is
 * dropped and counted. An entry written more than `futureDriftMsMax` ahead of this member's clock
 * is refused: it would win every later write and drag every member's clock along.
 */
import { EdgeqError, type Clock } from '../../src/core/index.ts';
import { isStateKey, STATE_KEY_BYTES_MAX } from '../wire/names.ts';
import type { StateUpdate } from '../wire/messages.ts';
import { versionWallMs, versionWins, type HybridClock } from './hlc.ts';

/** One entry as readers see it (the shape the region features use, gossip/region/mesh-state.ts on main). */
export interface MeshStateEntry {
  key: string;
  /** The JSON value or the bytes (a Buffer); undefined for a deletion. */
  value: unknown;
  version: number;
  member: string;
  /** Wall-clock ms of the write at the member that made it. */
  updatedAtMs: number;
  deleted: boolean;
}

/** Bounds of the store. */
export interface StateLimits {
  stateEntriesMax: number;
  stateValueBytesMax: number;
  stateBytesMax: number;
  tombstoneRetainMs: number;
  futureDriftMsMax: number;
}

/** What a merge did. */
export type MergeResult = 'applied' | 'stale' | 'expired' | 'future' | 'full' | 'malformed';

interface Stored {
  update: StateUpdate;
  /** Parsed JSON (deep-frozen) or the bytes; undefined for a tombstone. */
  value: unknown;
}

function deepFreeze<T>(v: T): T {
  if (v !== null && typeof v === 'object') {
    for (const child of Object.values(v as object)) deepFreeze(child);
    Object.freeze(v);
  }
  return v;
}

/** The state of one member. */
export class StateStore {
  private readonly entries = new Map<string, Stored>();
  private bytesHeld = 0;

  constructor(
    private readonly limits: StateLimits,
    private readonly clock: Clock,
    private readonly hlc: HybridClock,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  /** Bytes of keys and values held. */
  get bytes(): number {
    return this.bytesHeld;
  }

  private static cost(u: StateUpdate): number {
    return u.key.length + u.value.length;
  }

  /** Encodes and checks a local write; throws a typed error and changes nothing when it is refused. */
  private prepare(key: string, value: unknown, deleted: boolean, writer: string): StateUpdate {
    if (typeof key !== 'string' || !isStateKey(key)) {
      throw new EdgeqError('INVALID_ARGUMENT', `state key must be 1 to ${STATE_KEY_BYTES_MAX} printable ASCII characters without spaces`, { details: { key: 'key', value: String(key).slice(0, 200) } });
    }
    let bytes: Buffer = Buffer.alloc(0);
    let json = false;
    if (!deleted) {
      if (value instanceof Uint8Array) {
        bytes = Buffer.from(value);
      } else {
        let text: string | undefined;
        try {
          text = JSON.stringify(value);
        } catch (err) {
          throw new EdgeqError('INVALID_ARGUMENT', `state value of ${key} is not JSON-serialisable: ${(err as Error).message}`, { details: { key } });
        }
        if (typeof text !== 'string') throw new EdgeqError('INVALID_ARGUMENT', `state value of ${key} is not JSON-serialisable`, { details: { key } });
        bytes = Buffer.from(text, 'utf8');
        json = true;
      }
      if (bytes.length > this.limits.stateValueBytesMax) {
        throw new EdgeqError('MESSAGE_TOO_LARGE', `state value of ${key} has ${bytes.length} bytes, at most stateValueBytesMax ${this.limits.stateValueBytesMax}`, {
          details: { key, bytes: bytes.length, stateValueBytesMax: this.limits.stateValueBytesMax },
        });
      }
    }
    const update: StateUpdate = { kind: 'state', key, version: 0, member: writer, deleted, json, value: bytes };
    const room = this.roomFor(update);
    if (room !== null) throw new EdgeqError('STORAGE_FULL', `state is full: ${room}`, { details: { key, bound: room } });
    update.version = this.hlc.tick();
    return update;
  }

  /** Null when `u` fits (after purging expired tombstones), else the bound it breaks. */
  private roomFor(u: StateUpdate): string | null {
    const old = this.entries.get(u.key);
    const delta = StateStore.cost(u) - (old ? StateStore.cost(old.update) : 0);
    const fits = () => (old !== undefined || this.entries.size < this.limits.stateEntriesMax) && this.bytesHeld + delta <= this.limits.stateBytesMax;
    if (fits()) return null;
    this.expire();
    if (fits()) return null;
    return old === undefined && this.entries.size >= this.limits.stateEntriesMax ? `stateEntriesMax ${this.limits.stateEntriesMax}` : `stateBytesMax ${this.limits.stateBytesMax}`;
  }

  /** A local write of `value` (bytes, or anything JSON); returns the update to disseminate. */
  set(key: string, value: unknown, writer: string): { update: StateUpdate; entry: MeshStateEntry } {
    const update = this.prepare(key, value, false, writer);
    this.store(update, update.json ? deepFreeze(JSON.parse(update.value.toString('utf8')) as unknown) : Buffer.from(update.value));
    return { update, entry: this.view(key)! };
  }

  /** A local deletion (a tombstone, even when the key is unknown here: it may exist elsewhere). */
  delete(key: string, writer: string): { update: StateUpdate; entry: MeshStateEntry } {
    const update = this.prepare(key, undefined, true, writer);
    this.store(update, undefined);
    return { update, entry: this.view(key)! };
  }

  private store(u: StateUpdate, value: unknown): void {
    const old = this.entries.get(u.key);
    this.bytesHeld += StateStore.cost(u) - (old ? StateStore.cost(old.update) : 0);
    this.entries.set(u.key, { update: u, value });
  }

  private expired(u: StateUpdate, nowMs: number): boolean {
    return u.deleted && nowMs - versionWallMs(u.version) >= this.limits.tombstoneRetainMs;
  }

  /** Merges an entry learned from another member; last writer wins. */
  merge(u: StateUpdate): MergeResult {
    const nowMs = this.clock.nowMs();
    if (versionWallMs(u.version) > nowMs + this.limits.futureDriftMsMax) return 'future';
    const old = this.entries.get(u.key);
    if (old && !versionWins(u.version, u.member, old.update.version, old.update.member)) return 'stale';
    this.hlc.observe(u.version);
    if (this.expired(u, nowMs)) {
      // Too old to keep, yet newer than what is held: the older value goes, the tombstone too.
      if (!old) return 'expired';
      this.bytesHeld -= StateStore.cost(old.update);
      this.entries.delete(u.key);
      return 'applied';
    }
    let value: unknown;
    if (!u.deleted) {
      if (u.json) {
        try {
          value = deepFreeze(JSON.parse(u.value.toString('utf8')) as unknown);
        } catch {
          return 'malformed';
        }
      } else {
        value = Buffer.from(u.value);
      }
    }
    if (this.roomFor(u) !== null) return 'full';
    this.store(u, value);
    return 'applied';
  }

  /** Purges tombstones past their retention; returns how many. */
  expire(): number {
    const nowMs = this.clock.nowMs();
    let purged = 0;
    for (const [key, s] of this.entries) {
      if (!this.expired(s.update, nowMs)) continue;
      this.bytesHeld -= StateStore.cost(s.update);
      this.entries.delete(key);
      purged++;
    }
    return purged;
  }

  /** The update of `key` as held (for push-pull and re-gossip). */
  update(key: string): StateUpdate | undefined {
    return this.entries.get(key)?.update;
  }

  /** Every held update, tombstones included. */
  updates(): StateUpdate[] {
    return [...this.entries.values()].map((s) => s.update);
  }

  /** One entry as readers see it. */
  view(key: string): MeshStateEntry | undefined {
    const s = this.entries.get(key);
    if (!s) return undefined;
    const u = s.update;
    // Bytes are copied out: a reader must not be able to change what the store disseminates.
    return { key, value: Buffer.isBuffer(s.value) ? Buffer.from(s.value) : s.value, version: u.version, member: u.member, updatedAtMs: versionWallMs(u.version), deleted: u.deleted };
  }

  /** Every entry, tombstones included. */
  all(): MeshStateEntry[] {
    return [...this.entries.keys()].map((k) => this.view(k)!);
  }
}
