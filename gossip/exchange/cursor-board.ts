/**
 * The exchange's cursors in the mesh state, under `cursor/<region>/<topic>/<partition>`: what each
 * region has applied of every origin (its version vector for that partition) and its own readable
 * end. Every region converges to every region's entries, so
 *  - a replicator whose origin is out of reach finds a region that holds more of it (relay),
 *  - a replicator knows how far its origin has got while it cannot reach it (lag, stalls),
 *  - acks=geo knows when N other regions have applied a record.
 * A cursor here is a copy for others to plan with; the truth is each region's log.
 */
import type { MeshStateAccess, MeshStateEntry } from '../region/index.ts';
import type { Clock, TimerHandle } from '../../src/core/index.ts';

const PREFIX = 'cursor/';

/** One region's entry for one partition. */
export interface PartitionCursors {
  /** Per origin: the highest origin offset applied in this region. */
  applied: Record<string, number>;
  /** This region's own readable end (its last own offset a consumer can read), -1 for none. */
  head: number;
  /** Per origin, the highest origin offset this region's retention deleted (absent: none): it relays that origin only from past it. */
  deleted?: Record<string, number>;
}

export const cursorKey = (region: string, topic: string, partition: number): string => `${PREFIX}${region}/${topic}/${partition}`;

/** Parses a cursor key; undefined for any other key. */
export function parseCursorKey(key: string): { region: string; topic: string; partition: number } | undefined {
  if (!key.startsWith(PREFIX)) return undefined;
  const rest = key.slice(PREFIX.length);
  const slash = rest.indexOf('/');
  const last = rest.lastIndexOf('/');
  if (slash <= 0 || last <= slash) return undefined;
  const partition = Number(rest.slice(last + 1));
  if (!Number.isInteger(partition) || partition < 0) return undefined;
  return { region: rest.slice(0, slash), topic: rest.slice(slash + 1, last), partition };
}

function isCursors(v: unknown): v is PartitionCursors {
  if (typeof v !== 'object' || v === null) return false;
  const c = v as PartitionCursors;
  return typeof c.head === 'number' && typeof c.applied === 'object' && c.applied !== null && Object.values(c.applied).every((n) => typeof n === 'number');
}

/** Reads every region's cursors and publishes this region's, coalesced. */
export class CursorBoard {
  private readonly mine = new Map<string, PartitionCursors>();
  private readonly dirty = new Set<string>();
  private timer: TimerHandle | null = null;

  constructor(
    private readonly mesh: MeshStateAccess,
    private readonly clock: Clock,
    private readonly publishDelayMs: number,
  ) {}

  /** `region`'s entry for the partition, if the mesh has one. */
  get(region: string, topic: string, partition: number): PartitionCursors | undefined {
    const e = this.entry(cursorKey(region, topic, partition));
    return e && !e.deleted && isCursors(e.value) ? e.value : undefined;
  }

  /** Every region's entry for the partition. */
  all(topic: string, partition: number): Map<string, PartitionCursors> {
    const out = new Map<string, PartitionCursors>();
    for (const e of this.mesh.state()) {
      const k = parseCursorKey(e.key);
      if (!k || e.deleted || k.topic !== topic || k.partition !== partition || !isCursors(e.value)) continue;
      out.set(k.region, e.value);
    }
    return out;
  }

  /** Sets this region's applied cursor for `origin` (published after the coalescing delay). */
  setApplied(topic: string, partition: number, origin: string, offset: number): void {
    const c = this.own(topic, partition);
    if (c.applied[origin] === offset) return;
    c.applied[origin] = offset;
    this.markDirty(topic, partition);
  }

  /** Sets this region's own readable end for the partition. */
  setHead(topic: string, partition: number, head: number): void {
    const c = this.own(topic, partition);
    if (c.head === head) return;
    c.head = head;
    this.markDirty(topic, partition);
  }

  /** Sets what this region's retention deleted of each origin in the partition. */
  setDeleted(topic: string, partition: number, deleted: Record<string, number>): void {
    const c = this.own(topic, partition);
    if (JSON.stringify(c.deleted ?? {}) === JSON.stringify(deleted)) return;
    c.deleted = { ...deleted };
    this.markDirty(topic, partition);
  }

  /** Drops this region's entries of a topic that is gone. */
  forget(topic: string): void {
    for (const key of [...this.mine.keys()]) {
      const k = parseCursorKey(key);
      if (k?.topic !== topic) continue;
      this.mine.delete(key);
      this.dirty.delete(key);
      this.mesh.deleteState(key);
    }
  }

  /** Follows changes of cursor entries. */
  onChange(fn: (region: string, topic: string, partition: number, c: PartitionCursors) => void): () => void {
    return this.mesh.onStateChange((e) => {
      const k = parseCursorKey(e.key);
      if (k && !e.deleted && isCursors(e.value)) fn(k.region, k.topic, k.partition, e.value);
    });
  }

  close(): void {
    this.timer?.cancel();
    this.timer = null;
    this.flush();
  }

  private own(topic: string, partition: number): PartitionCursors {
    const key = cursorKey(this.mesh.self().region, topic, partition);
    let c = this.mine.get(key);
    if (!c) {
      const published = this.entry(key);
      c = published && !published.deleted && isCursors(published.value) ? { applied: { ...published.value.applied }, head: published.value.head, deleted: { ...(published.value.deleted ?? {}) } } : { applied: {}, head: -1 };
      this.mine.set(key, c);
    }
    return c;
  }

  private entry(key: string): MeshStateEntry | undefined {
    return this.mesh.state().find((e) => e.key === key);
  }

  private markDirty(topic: string, partition: number): void {
    this.dirty.add(cursorKey(this.mesh.self().region, topic, partition));
    if (this.timer) return;
    this.timer = this.clock.setTimeout(() => {
      this.timer = null;
      this.flush();
    }, this.publishDelayMs);
  }

  private flush(): void {
    for (const key of this.dirty) {
      const c = this.mine.get(key);
      if (c) this.mesh.setState(key, { applied: { ...c.applied }, head: c.head, ...(c.deleted && Object.keys(c.deleted).length > 0 ? { deleted: { ...c.deleted } } : {}) });
    }
    this.dirty.clear();
  }
}
