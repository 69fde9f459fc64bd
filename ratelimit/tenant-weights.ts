/**
 * Tenant weights for max-min fair admission, as the gateway takes them (`--tenant-weights a=2,b=1`,
 * EDGEQ_TENANT_WEIGHTS): a tenant sending more than capacity allows gets a share in proportion to
 * its weight. A tenant not listed weighs DEFAULT_TENANT_WEIGHT. Parsing is strict: every entry
 * `tenant=weight`, a valid tenant name once, a weight in (0, TENANT_WEIGHT_MAX]; the error names
 * the flag (or variable) and the entry.
 */
import { EdgeqError } from '../src/core/index.ts';
import { TENANT_NAME } from './quota.ts';

/** The weight of a tenant the list does not name. */
export const DEFAULT_TENANT_WEIGHT = 1;
/** Largest weight: 10^6 to 1 already gives the light tenant nothing in practice. */
export const TENANT_WEIGHT_MAX = 1_000_000;
/** Tenants a list may name (the limiter tracks at most LIMITER_TENANTS_MAX anyway). */
export const TENANT_WEIGHTS_MAX = 10_000;

/** Parses `a=2,b=1` (whitespace around entries ignored; an empty string is no weights). */
export function parseTenantWeights(raw: string, key = 'tenantWeights'): Map<string, number> {
  const out = new Map<string, number>();
  const fail = (msg: string): never => {
    throw new EdgeqError('INVALID_CONFIG', `${key}: ${msg} (expected tenant=weight,… e.g. "a=2,b=1")`, { details: { key } });
  };
  const entries = raw.split(',').map((e) => e.trim()).filter((e) => e !== '');
  if (entries.length > TENANT_WEIGHTS_MAX) fail(`at most ${TENANT_WEIGHTS_MAX} tenants, got ${entries.length}`);
  for (const entry of entries) {
    const eq = entry.indexOf('=');
    if (eq < 0) fail(`"${entry}" has no "="`);
    const tenant = entry.slice(0, eq).trim();
    const text = entry.slice(eq + 1).trim();
    if (tenant === '*' || !TENANT_NAME.test(tenant)) fail(`"${tenant}" is not a tenant name ([A-Za-z0-9._-]{1,64})`);
    if (out.has(tenant)) fail(`tenant "${tenant}" is given twice`);
    const weight = Number(text);
    if (!/^\d+(\.\d+)?$/.test(text) || !Number.isFinite(weight) || weight <= 0 || weight > TENANT_WEIGHT_MAX) {
      fail(`the weight of "${tenant}" must be a number in (0, ${TENANT_WEIGHT_MAX}], got "${text}"`);
    }
    out.set(tenant, weight);
  }
  return out;
}
