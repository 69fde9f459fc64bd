/**
 * What the mesh accepts as a member id, a region, an address, a tag and a state key, with their
 * byte bounds. The same checks run on options (a typed error) and on every decoded message (a
 * counted drop), so nothing the codec lets through can break a bound elsewhere.
 */

/** Member ids: what a gateway's name and pid can make, e.g. `us-east-gw-1`. */
export const MEMBER_ID_BYTES_MAX = 64;
/** Regions are site names (issue 12): `[a-z0-9-]{1,63}`. */
export const REGION_BYTES_MAX = 63;
/** `host:port`; an IPv6 literal in brackets fits. */
export const ADDRESS_BYTES_MAX = 128;
/** Tags per member, and their bytes (keys plus values), so an alive message stays small. */
export const TAGS_MAX = 16;
export const TAG_KEY_BYTES_MAX = 32;
export const TAG_VALUE_BYTES_MAX = 64;
export const TAGS_BYTES_MAX = 256;
/** State keys: printable ASCII such as `region/us-east` or `topic/orders`. */
export const STATE_KEY_BYTES_MAX = 128;
/** The cluster name travels in every message. */
export const CLUSTER_NAME_BYTES_MAX = 64;

const MEMBER_ID = /^[A-Za-z0-9._:-]{1,64}$/;
const REGION = /^[a-z0-9-]{1,63}$/;
const CLUSTER = /^[A-Za-z0-9._-]{1,64}$/;
/** A letter or digit first: `__proto__` and friends are not tag keys. */
const TAG_KEY = /^[A-Za-z0-9][A-Za-z0-9._-]{0,31}$/;
const TAG_VALUE = /^[\x20-\x7e]{0,64}$/;
const STATE_KEY = /^[\x21-\x7e]{1,128}$/;
const HOST = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)$/;

export function isMemberId(s: string): boolean {
  return MEMBER_ID.test(s);
}

export function isRegion(s: string): boolean {
  return REGION.test(s);
}

export function isClusterName(s: string): boolean {
  return CLUSTER.test(s);
}

export function isStateKey(s: string): boolean {
  return STATE_KEY.test(s);
}

/** Splits `host:port` (IPv6 in brackets); null when it is not one. */
export function parseAddress(address: string): { host: string; port: number } | null {
  if (address.length === 0 || address.length > ADDRESS_BYTES_MAX) return null;
  const colon = address.lastIndexOf(':');
  if (colon <= 0) return null;
  const host = address.slice(0, colon);
  const portText = address.slice(colon + 1);
  if (!/^[0-9]{1,5}$/.test(portText) || !HOST.test(host)) return null;
  const port = Number(portText);
  if (port < 1 || port > 65535) return null;
  return { host: host.startsWith('[') ? host.slice(1, -1) : host, port };
}

export function isAddress(s: string): boolean {
  return parseAddress(s) !== null;
}

/** Why a tag map is refused, or null when it is fine. */
export function tagsProblem(tags: Readonly<Record<string, string>>): string | null {
  const entries = Object.entries(tags);
  if (entries.length > TAGS_MAX) return `at most ${TAGS_MAX} tags, got ${entries.length}`;
  let bytes = 0;
  for (const [k, v] of entries) {
    if (!TAG_KEY.test(k)) return `tag key "${k}" must match ${TAG_KEY.source}`;
    if (typeof v !== 'string' || !TAG_VALUE.test(v)) return `tag "${k}" must be printable ASCII of at most ${TAG_VALUE_BYTES_MAX} bytes`;
    bytes += k.length + v.length;
  }
  if (bytes > TAGS_BYTES_MAX) return `tags take ${bytes} bytes, at most ${TAGS_BYTES_MAX}`;
  return null;
}
