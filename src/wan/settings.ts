/**
 * The settings of a directed link and the one validator every change goes through, whether it
 * comes from code (`LinkEmulator.set`) or from a JSON body (the dev control API): a bad value is
 * an INVALID_ARGUMENT naming the field, found before anything is applied.
 */
import { EdgeqError } from '../core/index.ts';

/** How a directed link treats what crosses it. */
export interface LinkSettings {
  /** One-way delay added to every datagram and TCP piece, in ms. */
  latencyMs: number;
  /** Half-width of the uniform spread around the latency: each delay is in [latency − jitter, latency + jitter], floored at 0. */
  jitterMs: number;
  /** Probability in [0, 1] that a datagram is dropped, or that a TCP piece stalls for a retransmission timeout. */
  lossRate: number;
  /** Rate of the link's token bucket, shared by all its routes; 0 is unlimited. */
  bandwidthBytesPerSec: number;
  /** Drops every datagram and holds every TCP byte that would cross the link. */
  blackhole: boolean;
}

/** A change to a link: any subset of its settings, plus `reset`, which resets the TCP connections crossing it once. */
export interface LinkPatch {
  settings: Partial<LinkSettings>;
  reset: boolean;
}

/** The settings of a new link: 25 ms one way (the default), nothing else. */
export const LINK_SETTINGS_DEFAULT: LinkSettings = {
  latencyMs: 25,
  jitterMs: 0,
  lossRate: 0,
  bandwidthBytesPerSec: 0,
  blackhole: false,
};

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const FIELDS = ['latencyMs', 'jitterMs', 'lossRate', 'bandwidthBytesPerSec', 'blackhole'] as const;
const PATCH_FIELDS = new Set<string>([...FIELDS, 'reset']);

function invalid(field: string, message: string): EdgeqError {
  return new EdgeqError('INVALID_ARGUMENT', `${field} ${message}`, { details: { field } });
}

function describe(value: unknown): string {
  if (typeof value === 'number') return String(value);
  if (typeof value === 'string') return JSON.stringify(value);
  return value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value;
}

function checkMs(field: string, value: unknown, latencyMsMax: number): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > latencyMsMax) {
    throw invalid(field, `must be a number of milliseconds within 0..${latencyMsMax}, got ${describe(value)}`);
  }
  return value;
}

/**
 * Checks a change given as a plain object (a parsed JSON body or a `Partial<LinkSettings>`):
 * only known fields, each of the right type and range. Throws on the first bad field.
 */
export function checkLinkPatch(input: unknown, latencyMsMax: number): LinkPatch {
  if (!isPlainObject(input)) throw new EdgeqError('INVALID_ARGUMENT', 'link settings must be an object', { details: { field: null } });
  for (const key of Object.keys(input)) {
    if (!PATCH_FIELDS.has(key)) throw invalid(key, `is not a link setting (known: ${[...PATCH_FIELDS].join(', ')})`);
  }
  const settings: Partial<LinkSettings> = {};
  if (input['latencyMs'] !== undefined) settings.latencyMs = checkMs('latencyMs', input['latencyMs'], latencyMsMax);
  if (input['jitterMs'] !== undefined) settings.jitterMs = checkMs('jitterMs', input['jitterMs'], latencyMsMax);
  const loss = input['lossRate'];
  if (loss !== undefined) {
    if (typeof loss !== 'number' || !Number.isFinite(loss) || loss < 0 || loss > 1) throw invalid('lossRate', `must be a number within 0..1, got ${describe(loss)}`);
    settings.lossRate = loss;
  }
  const bw = input['bandwidthBytesPerSec'];
  if (bw !== undefined) {
    if (typeof bw !== 'number' || !Number.isSafeInteger(bw) || bw < 0) throw invalid('bandwidthBytesPerSec', `must be a non-negative integer (0: unlimited), got ${describe(bw)}`);
    settings.bandwidthBytesPerSec = bw;
  }
  const blackhole = input['blackhole'];
  if (blackhole !== undefined) {
    if (typeof blackhole !== 'boolean') throw invalid('blackhole', `must be a boolean, got ${describe(blackhole)}`);
    settings.blackhole = blackhole;
  }
  const reset = input['reset'];
  if (reset !== undefined && typeof reset !== 'boolean') throw invalid('reset', `must be a boolean, got ${describe(reset)}`);
  return { settings, reset: reset === true };
}

/** A region name as the issue defines a site name. */
const REGION_RE = /^[a-z0-9-]{1,63}$/;

/** Throws INVALID_ARGUMENT unless `region` is a valid site name (`[a-z0-9-]{1,63}`). */
export function checkRegion(region: unknown, field: string): string {
  if (typeof region !== 'string' || !REGION_RE.test(region)) {
    throw new EdgeqError('INVALID_ARGUMENT', `${field} must be a region name ([a-z0-9-]{1,63}), got ${describe(region)}`, { details: { field } });
  }
  return region;
}
