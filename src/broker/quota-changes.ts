/**
 * AlterQuotas as the broker checks it: every op parsed with the quota parser the HTTP API uses
 * (ratelimit/quota.ts), all or nothing. One invalid op refuses the request whole, so a batch of
 * changes never lands half-applied: the invalid op is answered INVALID_ARGUMENT naming its field,
 * the valid ones INVALID_ARGUMENT saying they were not applied because of it. Also a Quota as
 * the wire's QuotaEntry.
 */
import { EdgeqError, toEdgeqError } from '../core/index.ts';
import { parseQuota, quotaKey, QUOTA_TOPIC_NAME, QUOTAS_MAX, TENANT_NAME, type Quota } from '../../ratelimit/index.ts';
import { wireError, type AlterQuotaOp, type AlterQuotaResult, type AlterQuotasRequest, type QuotaEntry } from '../protocol/index.ts';

/**
 * Ops in one AlterQuotas. A cell writes them in one arbiter transaction, and etcd takes at most
 * 128 ops in one (`--max-txn-ops`, TXN_OPS_MAX); 100 leaves room and is far more than a person or
 * a script changes at once.
 */
export const QUOTA_OPS_MAX = 100;

/** One change of the quotas in force. */
export type QuotaChange = { kind: 'put'; quota: Quota } | { kind: 'remove'; tenant: string; topic: string };

/** What the ops of an AlterQuotas came to: the changes to make, or the answer refusing them all. */
export type ParsedAlter = { ok: true; changes: QuotaChange[] } | { ok: false; results: AlterQuotaResult[] };

const VALUE_FIELDS = ['recordsPerSec', 'bytesPerSec', 'burstRecords', 'burstBytes'] as const;

function bad(field: string, message: string): EdgeqError {
  return new EdgeqError('INVALID_ARGUMENT', message, { details: { field } });
}

/** The change one op asks for; throws INVALID_ARGUMENT naming the field. */
export function parseQuotaOp(op: AlterQuotaOp): QuotaChange {
  const tenant = op.tenant ?? '';
  const topic = op.topic ?? '';
  if (op.remove === true) {
    if (!TENANT_NAME.test(tenant)) throw bad('tenant', `tenant "${tenant}" is not a valid name (${TENANT_NAME.source})`);
    if (!QUOTA_TOPIC_NAME.test(topic)) throw bad('topic', `topic "${topic}" is not a valid name or *`);
    return { kind: 'remove', tenant, topic };
  }
  // The body the HTTP API would have had: absent values stay absent (parseQuota defaults bursts
  // and refuses missing rates); present ones go as they are, so 0, -1 or 2.5 are refused there.
  const body: Record<string, unknown> = {};
  for (const f of VALUE_FIELDS) {
    const v = op[f];
    if (v !== null && v !== undefined) body[f] = v;
  }
  if (op.scope) body['scope'] = op.scope;
  return { kind: 'put', quota: parseQuota(tenant, topic, body) };
}

/**
 * Parses every op of an AlterQuotas against the quotas in force (`current`): all valid, or the
 * answer that refuses them all. Also refused: more than QUOTA_OPS_MAX ops, two ops on one
 * (tenant, topic), and puts that would take the region past QUOTAS_MAX quotas.
 */
export function parseAlterQuotas(req: AlterQuotasRequest, current: ReadonlyMap<string, Quota>): ParsedAlter {
  const ops = req.ops ?? [];
  const refuseAll = (err: EdgeqError): ParsedAlter => ({ ok: false, results: ops.map((op) => resultOf(op, err)) });
  if (ops.length > QUOTA_OPS_MAX) {
    return refuseAll(bad('ops', `an AlterQuotas takes at most ${QUOTA_OPS_MAX} ops, got ${ops.length}`));
  }
  const changes: (QuotaChange | EdgeqError)[] = ops.map((op) => {
    try {
      return parseQuotaOp(op);
    } catch (err) {
      return toEdgeqError(err);
    }
  });
  const seen = new Set<string>();
  for (let i = 0; i < changes.length; i++) {
    const c = changes[i]!;
    if (c instanceof EdgeqError) continue;
    const key = keyOf(c);
    if (seen.has(key)) changes[i] = bad('ops', `(${tenantOf(c)}, ${topicOf(c)}) appears in more than one op`);
    seen.add(key);
  }
  const firstBad = changes.findIndex((c) => c instanceof EdgeqError);
  if (firstBad >= 0) {
    const cause = changes[firstBad] as EdgeqError;
    return {
      ok: false,
      results: ops.map((op, i) => {
        const c = changes[i]!;
        if (c instanceof EdgeqError) return resultOf(op, c);
        return resultOf(op, new EdgeqError('INVALID_ARGUMENT', `not applied: op ${firstBad} is invalid (${cause.message}); an AlterQuotas changes all or nothing`, { details: { field: 'ops' } }));
      }),
    };
  }
  const valid = changes as QuotaChange[];
  let count = current.size;
  for (const c of valid) {
    const exists = current.has(keyOf(c));
    if (c.kind === 'put' && !exists) count++;
    if (c.kind === 'remove' && exists) count--;
  }
  if (count > QUOTAS_MAX) return refuseAll(bad('ops', `a region holds at most ${QUOTAS_MAX} quotas; these ops would make ${count}`));
  return { ok: true, changes: valid };
}

/** The answer to ops that were applied. */
export function appliedResults(changes: readonly QuotaChange[], before: ReadonlyMap<string, Quota>): AlterQuotaResult[] {
  return changes.map((c) => ({ tenant: tenantOf(c), topic: topicOf(c), existed: before.has(keyOf(c)) }));
}

/** The answer to ops that all failed with `err` (the store could not write them). */
export function failedResults(req: AlterQuotasRequest, err: unknown): AlterQuotaResult[] {
  const e = toEdgeqError(err);
  return (req.ops ?? []).map((op) => resultOf(op, e));
}

function resultOf(op: AlterQuotaOp, err: EdgeqError): AlterQuotaResult {
  const field = err.code === 'INVALID_ARGUMENT' && typeof err.details['field'] === 'string' ? err.details['field'] : '';
  return { tenant: op.tenant ?? '', topic: op.topic ?? '', error: wireError(err), existed: false, invalidField: field };
}

const tenantOf = (c: QuotaChange): string => (c.kind === 'put' ? c.quota.tenant : c.tenant);
const topicOf = (c: QuotaChange): string => (c.kind === 'put' ? c.quota.topic : c.topic);

/** The quota map key a change is about. */
export const keyOf = (c: QuotaChange): string => quotaKey(tenantOf(c), topicOf(c));

/** A quota as DescribeQuotas lists it. */
export function toQuotaEntry(q: Quota): QuotaEntry {
  return { tenant: q.tenant, topic: q.topic, recordsPerSec: q.recordsPerSec, bytesPerSec: q.bytesPerSec, burstRecords: q.burstRecords, burstBytes: q.burstBytes, scope: q.scope };
}

/** Applies changes to a map of quotas (the file store and the tests use it). */
export function applyChanges(quotas: Map<string, Quota>, changes: readonly QuotaChange[]): void {
  for (const c of changes) {
    if (c.kind === 'put') quotas.set(keyOf(c), c.quota);
    else quotas.delete(keyOf(c));
  }
}
