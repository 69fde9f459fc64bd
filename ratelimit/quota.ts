/**
 * A quota: records/s and bytes/s for a tenant, or a (tenant, topic), each with a burst; `*` in
 * either place is a wildcard. Parsing is strict (the HTTP API and the CLI hand bodies here): every
 * field a positive integer within bounds, no unknown field, valid names; the error names the field
 * and nothing is changed by a refused one.
 */
import { EdgeqError } from '../src/core/index.ts';

/** Largest rate or burst a quota takes: 10^12/s is beyond any link, and stays exact in the bucket's integer thousandths (< 2^53). */
export const QUOTA_VALUE_MAX = 1_000_000_000_000;
/** A tenant name: an API key's tenant (`docs/http-api.md`), `anonymous` with auth off, or `*`. */
export const TENANT_NAME = /^(\*|[A-Za-z0-9._-]{1,64})$/;
/** A topic name as the broker allows them (topic-name.ts), or `*`. */
export const QUOTA_TOPIC_NAME = /^(\*|[A-Za-z0-9._-]{1,249})$/;

/**
 * Default burst, in seconds of the rate: a tenth of a second. A full bucket lets a burst through
 * on top of the rate, so the first 10 s window admits 10·R + burst: at 0.1 s that is +1%, inside
 * the ±5% the quota must hold in every window (a one-second burst would be +10%).
 */
export const DEFAULT_BURST_SEC = 0.1;

export interface QuotaLimits {
  recordsPerSec: number;
  bytesPerSec: number;
  /** Records the bucket holds (default: a tenth of a second's worth, see DEFAULT_BURST_SEC). */
  burstRecords: number;
  /** Bytes the bucket holds (default: a tenth of a second's worth). */
  burstBytes: number;
}

export interface Quota extends QuotaLimits {
  tenant: string;
  topic: string;
  /** `local`: this region's own; `global`: shared by every region (shares follow demand). */
  scope: 'local' | 'global';
}

const FIELDS = ['recordsPerSec', 'bytesPerSec', 'burstRecords', 'burstBytes', 'scope'] as const;

function bad(field: string, message: string): EdgeqError {
  return new EdgeqError('INVALID_ARGUMENT', message, { details: { field } });
}

function positiveInt(body: Record<string, unknown>, field: string, fallback?: number): number {
  const v = body[field];
  if (v === undefined) {
    if (fallback !== undefined) return fallback;
    throw bad(field, `"${field}" is required`);
  }
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > QUOTA_VALUE_MAX) {
    throw bad(field, `"${field}" must be an integer in [1, ${QUOTA_VALUE_MAX}], got ${JSON.stringify(v)}`);
  }
  return v;
}

/** Parses a quota body for (tenant, topic); throws INVALID_ARGUMENT naming the field. */
export function parseQuota(tenant: string, topic: string, body: unknown): Quota {
  if (!TENANT_NAME.test(tenant)) throw bad('tenant', `tenant "${tenant}" is not a valid name (${TENANT_NAME.source})`);
  if (!QUOTA_TOPIC_NAME.test(topic)) throw bad('topic', `topic "${topic}" is not a valid name or *`);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw bad('body', 'the body must be a JSON object');
  const b = body as Record<string, unknown>;
  const unknown = Object.keys(b).find((k) => !(FIELDS as readonly string[]).includes(k));
  if (unknown !== undefined) throw bad(unknown, `unknown field "${unknown}" (known: ${FIELDS.join(', ')})`);
  const recordsPerSec = positiveInt(b, 'recordsPerSec');
  const bytesPerSec = positiveInt(b, 'bytesPerSec');
  const scope = b['scope'] ?? 'local';
  if (scope !== 'local' && scope !== 'global') throw bad('scope', `"scope" must be "local" or "global", got ${JSON.stringify(scope)}`);
  return {
    tenant,
    topic,
    recordsPerSec,
    bytesPerSec,
    burstRecords: positiveInt(b, 'burstRecords', Math.max(1, Math.ceil(recordsPerSec * DEFAULT_BURST_SEC))),
    burstBytes: positiveInt(b, 'burstBytes', Math.max(1, Math.ceil(bytesPerSec * DEFAULT_BURST_SEC))),
    scope,
  };
}

/**
 * The quota that applies to (tenant, topic), most specific first: (tenant, topic), (tenant, *),
 * (*, topic), (*, *). Undefined: no quota applies.
 */
export function resolveQuota<Q extends { tenant: string; topic: string }>(quotas: ReadonlyMap<string, Q>, tenant: string, topic: string): Q | undefined {
  return quotas.get(quotaKey(tenant, topic)) ?? quotas.get(quotaKey(tenant, '*')) ?? quotas.get(quotaKey('*', topic)) ?? quotas.get(quotaKey('*', '*'));
}

export const quotaKey = (tenant: string, topic: string): string => `${tenant}\u0000${topic}`;

/** True when two quotas set the same limits and scope (their tenant and topic aside). */
export function sameQuota(a: Quota, b: Quota): boolean {
  return a.recordsPerSec === b.recordsPerSec && a.bytesPerSec === b.bytesPerSec && a.burstRecords === b.burstRecords && a.burstBytes === b.burstBytes && a.scope === b.scope;
}
