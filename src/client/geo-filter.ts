/**
 * The consumer's side of exact failover between regions (docs/geo.md): a committed offset whose
 * metadata holds `{"geo": {"from", "vector", "filterUntil"}}` was translated from another region's
 * position. Starting there, the consumer skips the records below `filterUntil` that the vector
 * covers (the group consumed them in the old region), and carries the same metadata on its commits
 * while they stay below `filterUntil`, so a restart keeps filtering; at or past it the metadata is
 * plain again.
 *
 * A record is covered when its origin offset is at or below the vector's entry for its origin.
 * Records written in the region read from carry no origin: their origin is that region (the
 * broker's `region` in the metadata) and their origin offset is their offset.
 */

/** Per origin region, the highest origin offset a group consumed. */
export type GeoVector = Record<string, number>;

/** What a translated commit's metadata says. */
export interface GeoPosition {
  /** The region the position was translated from. */
  from: string;
  vector: GeoVector;
  /** Local offset after the last covered record at or after the start; -1 when none is. */
  filterUntil: number;
}

/** Bound on the origins of one vector (a region per entry: far above any deployment's regions). */
export const GEO_VECTOR_ORIGINS_MAX = 64;

/** The metadata string of a commit that carries `p`. */
export function geoMetadata(p: GeoPosition): string {
  return JSON.stringify({ geo: { from: p.from, vector: p.vector, filterUntil: p.filterUntil } });
}

/** The geo position in a commit's metadata; null for plain metadata (or anything that does not parse as one). */
export function parseGeoMetadata(metadata: string | null | undefined): GeoPosition | null {
  if (!metadata || !metadata.startsWith('{')) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(metadata);
  } catch {
    return null;
  }
  const geo = (parsed as { geo?: unknown } | null)?.geo as { from?: unknown; vector?: unknown; filterUntil?: unknown } | undefined;
  if (!geo || typeof geo !== 'object') return null;
  if (typeof geo.from !== 'string' || !Number.isSafeInteger(geo.filterUntil) || (geo.filterUntil as number) < -1) return null;
  const vector = parseVector(geo.vector);
  if (!vector) return null;
  return { from: geo.from, vector, filterUntil: geo.filterUntil as number };
}

/** A vector from JSON; null unless it is an object of at most GEO_VECTOR_ORIGINS_MAX integer entries >= -1. */
export function parseVector(v: unknown): GeoVector | null {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return null;
  const entries = Object.entries(v as Record<string, unknown>);
  if (entries.length > GEO_VECTOR_ORIGINS_MAX) return null;
  const out: GeoVector = {};
  for (const [k, n] of entries) {
    if (k === '' || typeof n !== 'number' || !Number.isSafeInteger(n) || n < -1) return null;
    out[k] = n;
  }
  return out;
}

/** True when the vector covers the record (origin, originOffset). */
export function isCovered(vector: GeoVector, origin: string, originOffset: number): boolean {
  return originOffset <= (vector[origin] ?? -1);
}

/** The fields of a record the filter looks at. */
export interface FilterableRecord {
  offset: number;
  /** null for a record written in the region read from. */
  originRegion: string | null;
  originOffset: number;
}

/** The filter of one partition, from the geo position its start offset was committed with. */
export class GeoFilter {
  constructor(readonly position: GeoPosition) {}

  /**
   * True when the record must be skipped: below `filterUntil` and covered by the vector.
   * `ownRegion` is the region of the broker read from: the origin of records that carry none.
   */
  skips(r: FilterableRecord, ownRegion: string): boolean {
    if (r.offset >= this.position.filterUntil) return false;
    const origin = r.originRegion ?? ownRegion;
    const originOffset = r.originRegion === null ? r.offset : r.originOffset;
    return isCovered(this.position.vector, origin, originOffset);
  }

  /** The metadata a commit of `offset` carries: the position while below `filterUntil`, else plain. */
  metadataFor(offset: number): string {
    return offset < this.position.filterUntil ? geoMetadata(this.position) : '';
  }

  /** True once commits at `offset` no longer need the position (the filter has nothing left to skip). */
  doneAt(offset: number): boolean {
    return offset >= this.position.filterUntil;
  }
}
