/**
 * A region's published position of one consumer group, in the mesh state under
 * `group/<region>/<group>`: per global topic and partition, the committed offset there and its
 * vector (docs/geo.md). Other regions translate it into their own logs; it is a copy for them to
 * plan with, the truth is the old region's commits and log.
 */
import { parseVector, type GeoVector } from '../../src/client/index.ts';

const PREFIX = 'group/';

/** One partition's published position. */
export interface PublishedPosition {
  offset: number;
  vector: GeoVector;
}

/** The value of `group/<region>/<group>`. */
export interface GroupEntry {
  /** topic → partition (as a string key) → position. */
  topics: Record<string, Record<string, PublishedPosition>>;
  /** Wall-clock ms of the publication. */
  atMs: number;
  /** True when topics were left out to keep the entry under its byte bound. */
  truncated?: boolean;
}

export const groupKey = (region: string, group: string): string => `${PREFIX}${region}/${group}`;

/** Region and group of a group key (a region name has no '/', a group id may); undefined for other keys. */
export function parseGroupKey(key: string): { region: string; group: string } | undefined {
  if (!key.startsWith(PREFIX)) return undefined;
  const rest = key.slice(PREFIX.length);
  const slash = rest.indexOf('/');
  if (slash <= 0 || slash === rest.length - 1) return undefined;
  return { region: rest.slice(0, slash), group: rest.slice(slash + 1) };
}

/** The entry, checked; undefined for anything else. */
export function parseGroupEntry(v: unknown): GroupEntry | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  const e = v as { topics?: unknown; atMs?: unknown; truncated?: unknown };
  if (typeof e.atMs !== 'number' || typeof e.topics !== 'object' || e.topics === null) return undefined;
  const topics: GroupEntry['topics'] = {};
  for (const [t, parts] of Object.entries(e.topics as Record<string, unknown>)) {
    if (typeof parts !== 'object' || parts === null) return undefined;
    topics[t] = {};
    for (const [p, pos] of Object.entries(parts as Record<string, unknown>)) {
      const offset = (pos as { offset?: unknown } | null)?.offset;
      const vector = parseVector((pos as { vector?: unknown } | null)?.vector);
      if (!/^\d+$/.test(p) || typeof offset !== 'number' || !Number.isSafeInteger(offset) || offset < 0 || !vector) return undefined;
      topics[t]![p] = { offset, vector };
    }
  }
  return { topics, atMs: e.atMs, ...(e.truncated === true ? { truncated: true } : {}) };
}
