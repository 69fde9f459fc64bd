/**
 * Input checks shared by every arbiter, so all three reject the same bad input with the same
 * INVALID_ARGUMENT before anything reaches the store or the wire.
 */
import { EdgeqError } from '../../src/core/index.ts';
import type { TxnRequest } from './arbiter.ts';

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

/**
 * Compares, and separately ops, in one transaction: etcd's default `--max-txn-ops` (128), so the
 * same transaction is accepted by every arbiter. A cell transaction needs at most a handful.
 */
export const TXN_OPS_MAX = 128;
/**
 * Keys and values of one transaction together, in bytes: as large as one value may be, which
 * keeps the request inside etcd's 1.5 MiB `--max-request-bytes` and, base64-encoded, inside the
 * embedded wire's 2 MiB line.
 */
export const TXN_BYTES_MAX = VALUE_BYTES_MAX;

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

/**
 * Throws INVALID_ARGUMENT unless `request` is a transaction every arbiter accepts: at most
 * TXN_OPS_MAX compares and ops, at most TXN_BYTES_MAX of keys and values, and no put touching a
 * key that another op touches (etcd refuses those as "duplicate key").
 */
export function checkTxn(request: unknown): asserts request is TxnRequest {
  const r = request as Partial<TxnRequest> | null;
  if (!r || !Array.isArray(r.compares) || !Array.isArray(r.ops)) throw new EdgeqError('INVALID_ARGUMENT', 'a transaction needs compares and ops arrays');
  if (r.compares.length > TXN_OPS_MAX || r.ops.length > TXN_OPS_MAX) {
    throw new EdgeqError('INVALID_ARGUMENT', `a transaction takes at most ${TXN_OPS_MAX} compares and ${TXN_OPS_MAX} ops`, { details: { compares: r.compares.length, ops: r.ops.length, txnOpsMax: TXN_OPS_MAX } });
  }
  let bytes = 0;
  for (const c of r.compares) {
    checkKey(c?.key);
    if (c.target !== 'mod' && c.target !== 'create') throw new EdgeqError('INVALID_ARGUMENT', `compare target must be 'mod' or 'create'`, { details: { target: c.target } });
    checkRevision(c.revision, 'revision');
    bytes += Buffer.byteLength(c.key);
  }
  const puts = new Set<string>();
  const deletes: string[] = [];
  const prefixes: string[] = [];
  for (const op of r.ops) {
    if (op?.type === 'put') {
      checkPut(op.key, op.value, op);
      if (puts.has(op.key)) throw duplicateKey(op.key);
      puts.add(op.key);
      bytes += Buffer.byteLength(op.key) + op.value.length;
    } else if (op?.type === 'delete') {
      checkKey(op.key);
      deletes.push(op.key);
      bytes += Buffer.byteLength(op.key);
    } else if (op?.type === 'deletePrefix') {
      // An empty prefix would delete the whole store: never what a caller of a transaction means.
      checkKey(op.prefix);
      prefixes.push(op.prefix);
      bytes += Buffer.byteLength(op.prefix);
    } else {
      throw new EdgeqError('INVALID_ARGUMENT', 'a transaction op must be put, delete or deletePrefix', { details: { type: (op as { type?: unknown } | null)?.type } });
    }
  }
  for (const key of puts) if (deletes.includes(key) || prefixes.some((p) => key.startsWith(p))) throw duplicateKey(key);
  if (bytes > TXN_BYTES_MAX) throw new EdgeqError('INVALID_ARGUMENT', `a transaction of ${bytes} bytes of keys and values exceeds ${TXN_BYTES_MAX}`, { details: { bytes, txnBytesMax: TXN_BYTES_MAX } });
}

function duplicateKey(key: string): EdgeqError {
  return new EdgeqError('INVALID_ARGUMENT', `key ${key} is written twice in one transaction`, { details: { key } });
}
