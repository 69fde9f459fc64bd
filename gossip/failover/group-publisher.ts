/**
 * Publishes this region's consumer-group positions on global topics to the mesh, every
 * GEO_INTERVAL_MS from the region's exchange leader: per committed (topic, partition, N), the
 * vector of N computed from the local log's batch headers, kept incrementally (the cached (N, V)
 * moves forward by scanning only the new records; a commit that went back scans from the log start).
 * An entry is written only when it changed.
 */
import { GEO_GROUP_PREFIX, parseGeoMetadata, type GeoVector } from '../../src/client/index.ts';
import { silentLogger, type Clock, type Logger } from '../../src/core/index.ts';
import type { MeshStateAccess } from '../region/index.ts';
import type { GeoCell } from './geo-cell.ts';
import { groupKey, parseGroupKey, type GroupEntry, type PublishedPosition } from './group-entry.ts';
import { GEO_GROUPS_MAX, GEO_GROUP_ENTRY_BYTES_MAX } from './limits.ts';
import { scanLog } from './log-scan.ts';
import { advanceVector } from './vector.ts';

export interface GroupPublisherOptions {
  mesh: MeshStateAccess;
  cell: GeoCell;
  /** The global topics now. */
  topics: () => ReadonlySet<string>;
  clock: Clock;
  logger?: Logger;
}

/** Computes and publishes `group/<region>/<group>` entries. */
export class GroupPublisher {
  /** (group, topic, partition) → the last vector computed and the offset it is of. */
  private readonly cache = new Map<string, PublishedPosition>();
  /** group → the JSON of its last published topics (atMs left out: it changes every time). */
  private readonly published = new Map<string, string>();
  private readonly logger: Logger;
  /** Groups left out by GEO_GROUPS_MAX on the last pass. */
  skippedGroups = 0;

  constructor(private readonly o: GroupPublisherOptions) {
    this.logger = (o.logger ?? silentLogger).child({ component: 'geo-groups' });
  }

  private get region(): string {
    return this.o.mesh.self().region;
  }

  /** One pass over every group. */
  async publishAll(): Promise<void> {
    const global = this.o.topics();
    if (global.size === 0) return;
    const groups = (await this.o.cell.listGroups()).filter((g) => !g.startsWith(GEO_GROUP_PREFIX)).sort();
    this.skippedGroups = Math.max(0, groups.length - GEO_GROUPS_MAX);
    if (this.skippedGroups > 0) this.logger.warn({ groups: groups.length, geoGroupsMax: GEO_GROUPS_MAX }, 'more groups than GEO_GROUPS_MAX: the last ones (by id) are not published for failover');
    const keep = new Set(groups.slice(0, GEO_GROUPS_MAX));
    for (const g of keep) {
      try {
        await this.publishGroup(g, global);
      } catch (err) {
        this.logger.info({ group: g, err: (err as Error).message }, 'group position not published this pass');
      }
    }
    // Groups that are gone (or no longer fit) are withdrawn, and their cached vectors dropped
    // (the cache holds at most GEO_GROUPS_MAX groups' partitions).
    for (const k of [...this.cache.keys()]) if (!keep.has((JSON.parse(k) as [string])[0])) this.cache.delete(k);
    for (const g of [...this.published.keys()]) {
      if (keep.has(g)) continue;
      this.published.delete(g);
      this.o.mesh.deleteState(groupKey(this.region, g));
    }
  }

  /** Computes a group's entry and writes it when it changed. */
  async publishGroup(group: string, global: ReadonlySet<string>): Promise<GroupEntry | undefined> {
    const commits = (await this.o.cell.groupCommits(group)).filter((c) => global.has(c.topic) && c.offset >= 0);
    if (commits.length === 0) return undefined;
    const topics: GroupEntry['topics'] = {};
    for (const c of commits.sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition))) {
      const vector = withCarried(await this.vectorOf(group, c.topic, c.partition, c.offset), c.offset, c.metadata);
      (topics[c.topic] ??= {})[String(c.partition)] = { offset: c.offset, vector };
    }
    const entry = this.bounded(topics);
    const json = JSON.stringify(entry.topics);
    if (this.published.get(group) === json) return entry;
    this.o.mesh.setState(groupKey(this.region, group), entry);
    this.published.set(group, json);
    return entry;
  }

  /** The vector of committed offset `offset`, from the cache forward, or from the log start. */
  async vectorOf(group: string, topic: string, partition: number, offset: number): Promise<GeoVector> {
    const key = JSON.stringify([group, topic, partition]);
    const cached = this.cache.get(key);
    if (cached && cached.offset === offset) return { ...cached.vector };
    const forward = cached !== undefined && cached.offset < offset;
    const vector: GeoVector = forward ? { ...cached.vector } : {};
    const from = forward ? cached.offset : 0;
    await scanLog(this.o.cell, this.region, topic, partition, { from, to: offset }, (spans) => {
      advanceVector(vector, spans, from, offset);
    });
    this.cache.set(key, { offset, vector: { ...vector } });
    return vector;
  }

  /** The entry, with whole topics left out (last first) until it fits GEO_GROUP_ENTRY_BYTES_MAX. */
  private bounded(topics: GroupEntry['topics']): GroupEntry {
    const names = Object.keys(topics);
    for (let n = names.length; n >= 0; n--) {
      const kept = Object.fromEntries(names.slice(0, n).map((t) => [t, topics[t]!]));
      const entry: GroupEntry = { topics: kept, atMs: this.o.clock.nowMs(), ...(n < names.length ? { truncated: true } : {}) };
      if (Buffer.byteLength(JSON.stringify(entry)) <= GEO_GROUP_ENTRY_BYTES_MAX) return entry;
    }
    return { topics: {}, atMs: this.o.clock.nowMs(), truncated: true };
  }

  /** This region's published groups (as the mesh has them). */
  publishedGroups(): string[] {
    return this.o.mesh
      .state()
      .map((e) => (e.deleted ? undefined : parseGroupKey(e.key)))
      .filter((k): k is { region: string; group: string } => k?.region === this.region)
      .map((k) => k.group);
  }
}

/**
 * A group that moved here and is still below its horizon has also consumed what its carried vector
 * covers (records it skipped here, above its offset): both are per-origin prefixes (each origin's
 * order is kept in every log), so the group's vector is their entry-wise max. Without it, a second
 * failover before the horizon would deliver those records again.
 */
export function withCarried(vector: GeoVector, offset: number, metadata: string): GeoVector {
  const geo = parseGeoMetadata(metadata);
  if (!geo || offset >= geo.filterUntil) return vector;
  const out = { ...vector };
  for (const [origin, n] of Object.entries(geo.vector)) if (n > (out[origin] ?? -1)) out[origin] = n;
  return out;
}
