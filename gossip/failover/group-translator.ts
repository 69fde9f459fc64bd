/**
 * Translates other regions' published group positions into this region's log, every
 * GEO_INTERVAL_MS from the region's exchange leader, and keeps the result as commits of the
 * internal group `__geo.<region>.<group>` (offset = start; metadata = the vector and the horizon),
 * where a failover or a consumer with `resumeFrom` reads it with OffsetFetch.
 *
 * Incremental where cheap: the start only moves forward when the vector only grew, so a vector
 * that covers the last one is translated from the last start; anything else from the log start.
 */
import { geoGroupId, geoMetadata, type GeoVector } from '../../src/client/index.ts';
import { silentLogger, type Logger } from '../../src/core/index.ts';
import type { MeshStateAccess } from '../region/index.ts';
import type { GeoCell, GroupCommit } from './geo-cell.ts';
import { parseGroupEntry, parseGroupKey, groupKey, type GroupEntry } from './group-entry.ts';
import { GEO_GROUPS_MAX } from './limits.ts';
import { scanLog } from './log-scan.ts';
import { Translation, vectorCovers } from './vector.ts';

/** One partition's translated position. */
export interface TranslatedPartition {
  topic: string;
  partition: number;
  /** The first local offset the vector does not cover. */
  startOffset: number;
  /** Below it, covered records are filtered out; -1 when none is left after the start. */
  filterUntil: number;
  vector: GeoVector;
}

export interface GroupTranslatorOptions {
  mesh: MeshStateAccess;
  cell: GeoCell;
  /** The other regions the mesh knows. */
  otherRegions: () => string[];
  logger?: Logger;
}

interface Cached {
  vector: GeoVector;
  start: number;
  horizon: number;
  highWatermark: number;
}

export class GroupTranslator {
  private readonly cache = new Map<string, Cached>();
  /** `__geo.<region>.<group>` → JSON of its last written commits. */
  private readonly written = new Map<string, string>();
  private readonly logger: Logger;

  constructor(private readonly o: GroupTranslatorOptions) {
    this.logger = (o.logger ?? silentLogger).child({ component: 'geo-translator' });
  }

  private get region(): string {
    return this.o.mesh.self().region;
  }

  /** `region`'s published entry of `group`; undefined when it never published one. */
  entryOf(region: string, group: string): GroupEntry | undefined {
    const e = this.o.mesh.state().find((x) => x.key === groupKey(region, group));
    return e && !e.deleted ? parseGroupEntry(e.value) : undefined;
  }

  /** One pass: every other region's groups translated and stored. */
  async translateAll(): Promise<void> {
    const others = new Set(this.o.otherRegions());
    let done = 0;
    const live = new Set<string>();
    const liveIds = new Set<string>();
    for (const e of this.o.mesh.state()) {
      const k = e.deleted ? undefined : parseGroupKey(e.key);
      if (!k || !others.has(k.region)) continue;
      live.add(`${k.region}/${k.group}`);
      liveIds.add(geoGroupId(k.region, k.group));
      // Each region publishes at most GEO_GROUPS_MAX; this bounds a pass over all of them.
      if (done++ >= GEO_GROUPS_MAX * others.size) break;
      try {
        await this.store(k.region, k.group);
      } catch (err) {
        this.logger.info({ region: k.region, group: k.group, err: (err as Error).message }, 'group position not translated this pass');
      }
    }
    // What was cached of entries that are gone is dropped (the stored commits stay: a failover or
    // resumeFrom may still want the last translation).
    for (const k of [...this.cache.keys()]) if (!live.has((JSON.parse(k) as [string])[0])) this.cache.delete(k);
    for (const id of [...this.written.keys()]) if (!liveIds.has(id)) this.written.delete(id);
  }

  /** Translates `region`'s entry of `group` now and writes it to `__geo.<region>.<group>` when it changed. */
  async store(region: string, group: string): Promise<TranslatedPartition[] | undefined> {
    const parts = await this.translate(region, group);
    if (!parts) return undefined;
    const commits = toCommits(region, parts);
    const id = geoGroupId(region, group);
    const json = JSON.stringify(commits);
    if (this.written.get(id) !== json) {
      await this.o.cell.commit(id, commits);
      this.written.set(id, json);
    }
    return parts;
  }

  /** `region`'s entry of `group` translated into this region's log; undefined when there is none. */
  async translate(region: string, group: string): Promise<TranslatedPartition[] | undefined> {
    const entry = this.entryOf(region, group);
    if (!entry) return undefined;
    const out: TranslatedPartition[] = [];
    for (const [topic, parts] of Object.entries(entry.topics)) {
      for (const [p, pos] of Object.entries(parts)) {
        const partition = Number(p);
        try {
          const t = await this.translatePartition(`${region}/${group}`, topic, partition, pos.vector);
          out.push({ topic, partition, startOffset: t.start, filterUntil: t.horizon, vector: pos.vector });
        } catch (err) {
          // The topic may not exist here yet (the catalogue creates it): the next pass tries again.
          this.logger.info({ region, group, topic, partition, err: (err as Error).message }, 'partition not translated this pass');
        }
      }
    }
    return out;
  }

  private async translatePartition(owner: string, topic: string, partition: number, vector: GeoVector): Promise<Cached> {
    const key = JSON.stringify([owner, topic, partition]);
    const cached = this.cache.get(key);
    const fromStart = !cached || !vectorCovers(vector, cached.vector);
    const t = new Translation(vector, fromStart ? 0 : cached.start);
    const end = await scanLog(this.o.cell, this.region, topic, partition, { from: t.scannedTo }, (spans) => {
      t.add(spans);
      return t.done();
    });
    const r = t.result(end.highWatermark);
    const next: Cached = { vector: { ...vector }, start: r.start, horizon: r.horizon, highWatermark: end.highWatermark };
    this.cache.set(key, next);
    return next;
  }
}

/** The commits that hold a translation (offset = start, metadata = vector and horizon). */
export function toCommits(region: string, parts: readonly TranslatedPartition[]): GroupCommit[] {
  return parts.map((p) => ({ topic: p.topic, partition: p.partition, offset: p.startOffset, metadata: geoMetadata({ from: region, vector: p.vector, filterUntil: p.filterUntil }) }));
}
