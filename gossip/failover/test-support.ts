/**
 * Test support for failover (not shipped API): a region's cell in memory, with real batches of a
 * global topic's log (own writes and applied ones) and a coordinator's commits and members.
 */
import { buildBatch, readBatchHeader } from '../../src/log/index.ts';
import { EdgeqError } from '../../src/core/index.ts';
import type { GeoCell, GroupCommit, LogChunk } from './geo-cell.ts';

/** Batches one read answers at most: small, so scans take several reads. */
export const FAKE_READ_BATCHES_MAX = 2;

export class FakeGeoCell implements GeoCell {
  readonly logs = new Map<string, Buffer[]>();
  readonly commits = new Map<string, Map<string, GroupCommit>>();
  readonly members = new Map<string, number>();
  reads = 0;
  logStart = 0;

  constructor(readonly region: string) {}

  private log(topic: string, partition: number): Buffer[] {
    const k = `${topic}/${partition}`;
    if (!this.logs.has(k)) this.logs.set(k, []);
    return this.logs.get(k)!;
  }

  /** Appends one batch of `count` records: own writes (origin null) or applied from `origin` at `originOffset`. */
  async append(topic: string, partition: number, count: number, origin: { region: string; offset: number } | null = null): Promise<number> {
    const log = this.log(topic, partition);
    const base = this.end(topic, partition);
    log.push(await buildBatch(Array.from({ length: count }, (_, i) => ({ value: `${origin?.region ?? this.region}-${(origin?.offset ?? base) + i}` })), { baseOffset: base, origin }));
    return base;
  }

  end(topic: string, partition: number): number {
    const log = this.log(topic, partition);
    const last = log[log.length - 1];
    if (!last) return 0;
    const h = readBatchHeader(last);
    return h.baseOffset + h.lastOffsetDelta + 1;
  }

  async listGroups(): Promise<string[]> {
    return [...new Set([...this.commits.keys(), ...this.members.keys()])];
  }

  async groupCommits(group: string): Promise<GroupCommit[]> {
    return [...(this.commits.get(group)?.values() ?? [])];
  }

  async commit(group: string, commits: GroupCommit[]): Promise<void> {
    if ((this.members.get(group) ?? 0) > 0) throw new EdgeqError('UNKNOWN_MEMBER_ID', `group ${group} has members`);
    const m = this.commits.get(group) ?? new Map<string, GroupCommit>();
    for (const c of commits) m.set(`${c.topic}/${c.partition}`, { ...c });
    this.commits.set(group, m);
  }

  async liveMembers(group: string): Promise<number> {
    return this.members.get(group) ?? 0;
  }

  async read(topic: string, partition: number, offset: number): Promise<LogChunk> {
    this.reads++;
    const hw = this.end(topic, partition);
    if (offset < this.logStart) throw new EdgeqError('OFFSET_OUT_OF_RANGE', 'below the log start', { details: { logStartOffset: this.logStart } });
    const from = this.log(topic, partition).filter((b) => {
      const h = readBatchHeader(b);
      return h.baseOffset + h.lastOffsetDelta >= offset && h.baseOffset >= this.logStart;
    });
    return { records: Buffer.concat(from.slice(0, FAKE_READ_BATCHES_MAX)), highWatermark: hw, logStartOffset: this.logStart };
  }
}
