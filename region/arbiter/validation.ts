/**
 * Input checks shared by every arbiter, so all three reject the same bad input with the same
 * INVALID_ARGUMENT before anything reaches the store or the wire.
 */
import { EdgeqError } from '../../src/core/index.ts';

/**
 * Largest key in bytes. Arbiter keys are short paths (`cell/brokers/3`, `cell/partitions/t/0`);
 * 4 KiB is far above any of them and keeps one key's cost obvious.
 */
export const KEY_BYTES_MAX = 4096;
/**
 * Largest value in bytes. etcd refuses requests over 1.5 MiB by default (`--max-request-bytes`);
 * 1 MiB leaves room for the key and the request envelope, so all arbiters accept the same values.
 */
export const VALUE_BYTES_MAX = 1024 * 1024;
/** Longest lease: a day. Leases are liveness signals renewed every few seconds, never long-lived. */
export const LEASE_TTL_MS_MAX = 24 * 60 * 60 * 1000;

/** The "no lease" id, as etcd spells it. */
export const NO_LEASE = '0';

/** Throws INVALID_ARGUMENT unless `key` is a non-empty string of at most KEY_BYTES_MAX bytes. */
export function checkKey(key: unknown): asserts key is string {
  if (typeof key !== 'string' || key.length === 0) {
    throw new EdgeqError('INVALID_ARGUMENT', 'arbiter key must be a non-empty string', { details: { key } });
  }
  if (Buffer.byteLength(key) > KEY_BYTES_MAX) {
    throw new EdgeqError('INVALID_ARGUMENT', `arbiter key longer than ${KEY_BYTES_MAX} bytes`, { details: { keyBytes: Buffer.byteLength(key) } });
  }
}

/** Throws INVALID_ARGUMENT unless `prefix` is a string (empty means every key). */
export function checkPrefix(prefix: unknown): asserts prefix is string {
  if (typeof prefix !== 'string' || Buffer.byteLength(prefix) > KEY_BYTES_MAX) {
    throw new EdgeqError('INVALID_ARGUMENT', 'arbiter prefix must be a string of at most 4096 bytes', { details: { prefix } });
  }
}

/** Throws INVALID_ARGUMENT unless `value` is a Buffer of at most VALUE_BYTES_MAX bytes. */
export function checkValue(value: unknown): asserts value is Buffer {
  if (!Buffer.isBuffer(value)) throw new EdgeqError('INVALID_ARGUMENT', 'arbiter value must be a Buffer');
  if (value.length > VALUE_BYTES_MAX) {
    throw new EdgeqError('INVALID_ARGUMENT', `arbiter value longer than ${VALUE_BYTES_MAX} bytes`, { details: { valueBytes: value.length } });
  }
}

/** Throws INVALID_ARGUMENT unless `ttlMs` is a positive finite number of at most LEASE_TTL_MS_MAX. */
export function checkTtlMs(ttlMs: unknown): asserts ttlMs is number {
  if (typeof ttlMs !== 'number' || !Number.isFinite(ttlMs) || ttlMs <= 0 || ttlMs > LEASE_TTL_MS_MAX) {
    throw new EdgeqError('INVALID_ARGUMENT', `lease TTL must be in (0, ${LEASE_TTL_MS_MAX}] ms`, { details: { ttlMs } });
  }
}

/** Throws INVALID_ARGUMENT unless `revision` is a non-negative safe integer. */
export function checkRevision(revision: unknown, name: string): asserts revision is number {
  if (typeof revision !== 'number' || !Number.isSafeInteger(revision) || revision < 0) {
    throw new EdgeqError('INVALID_ARGUMENT', `${name} must be a non-negative integer`, { details: { [name]: revision } });
  }
}

/** Throws INVALID_ARGUMENT unless `leaseId` is absent or a non-empty string. */
export function checkLeaseId(leaseId: unknown): asserts leaseId is string | undefined {
  if (leaseId !== undefined && (typeof leaseId !== 'string' || leaseId.length === 0)) {
    throw new EdgeqError('INVALID_ARGUMENT', 'leaseId must be a non-empty string', { details: { leaseId } });
  }
}

/** The checks of `put`: key, value and optional lease. */
export function checkPut(key: unknown, value: unknown, options: { leaseId?: unknown }): asserts key is string {
  checkKey(key);
  checkValue(value);
  checkLeaseId(options.leaseId);
}

/** The checks of `compareAndSet`: those of `put` plus the expected revision. */
export function checkCas(key: unknown, value: unknown, options: { expectedModRevision?: unknown; leaseId?: unknown } | undefined): asserts key is string {
  checkKey(key);
  checkValue(value);
  checkRevision(options?.expectedModRevision, 'expectedModRevision');
  checkLeaseId(options?.leaseId);
}

/**
 * The error of a watch asked to start before the oldest revision still kept. It is not
 * retriable as such: the caller must re-read the state (getPrefix) and watch from that revision.
 */
export function compactedError(fromRevision: number, compactRevision: number): EdgeqError {
  return new EdgeqError('INVALID_ARGUMENT', `watch from revision ${fromRevision} is older than the kept history (compacted up to ${compactRevision})`, {
    details: { reason: 'compacted', fromRevision, compactRevision },
  });
}

/** True when `err` says a watch started before the kept history (see `compactedError`). */
export function isCompactedError(err: unknown): boolean {
  return err instanceof EdgeqError && err.code === 'INVALID_ARGUMENT' && err.details['reason'] === 'compacted';
}
