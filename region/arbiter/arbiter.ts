/**
 * The arbiter: the third-party quorum that decides who leads in a cell. The cell keeps in it its
 * membership (one key per live broker, bound to the broker's lease), each partition's leader,
 * leader epoch and ISR, and its topics. Every change that matters for safety is a
 * compare-and-set on the key's revision, so two controllers can never both win.
 *
 * Two implementations share this interface and one contract test: `EtcdArbiter` (production: an
 * etcd cluster through the `etcd3` client) and `EmbeddedArbiter` (a client of the `edgeq arbiter`
 * process, for a single machine). `MemoryArbiter` holds the semantics in one process and is what
 * the embedded arbiter process serves.
 *
 * Semantics (etcd's): every successful write bumps one global revision; a key's `modRevision` is
 * the revision of its last write and `createRevision` of its creation; a key written with a lease
 * is deleted when the lease expires or is revoked; watches deliver every change after the watch
 * started, in revision order. A transaction's writes share one revision and reach watches in the
 * order of its operations.
 */

/** One key and its value with its revisions. */
export interface KeyValue {
  key: string;
  value: Buffer;
  /** Revision of the write that created the key (0 for a missing key). */
  createRevision: number;
  /** Revision of the last write to the key. */
  modRevision: number;
  /** Lease the key is bound to, or 0. */
  leaseId: string;
}

/** A change seen by a watch. */
export interface WatchEvent {
  type: 'put' | 'delete';
  key: string;
  /** The new value (put) or empty (delete). */
  value: Buffer;
  modRevision: number;
}

/** A time-limited grant; keys bound to it vanish when it expires. */
export interface Lease {
  readonly id: string;
  readonly ttlMs: number;
  /**
   * Renews the lease once; resolves with the TTL the arbiter granted from now, rejects with
   * LEASE_EXPIRED when the lease is gone or ARBITER_UNAVAILABLE when the arbiter cannot be reached.
   */
  keepAliveOnce(): Promise<number>;
  /** Revokes the lease (its keys are deleted). */
  revoke(): Promise<void>;
}

/** A running watch. */
export interface Watch {
  close(): Promise<void>;
}

/** Options of a conditional write. */
export interface CasOptions {
  /**
   * The write succeeds only if the key's modRevision equals this; 0 means "only if the key does
   * not exist".
   */
  expectedModRevision: number;
  /** Binds the key to this lease. */
  leaseId?: string;
}

/** Result of a conditional write or delete. */
export interface CasResult {
  ok: boolean;
  /** The store's revision after the operation (the key's new modRevision when ok). */
  revision: number;
  /** The key as it is now, when the condition failed (null if it does not exist). */
  current: KeyValue | null;
}

/** One condition of a transaction: the key's revision equals `revision` (0 for a missing key). */
export interface TxnCompare {
  key: string;
  /** The revision of the key's last write ('mod') or of its creation ('create'). */
  target: 'mod' | 'create';
  revision: number;
}

/** One write of a transaction. */
export type TxnOp =
  | { type: 'put'; key: string; value: Buffer; leaseId?: string }
  | { type: 'delete'; key: string }
  /** Deletes every key starting with `prefix` (which may not be empty). */
  | { type: 'deletePrefix'; prefix: string };

/**
 * A transaction (etcd's Txn without the failure branch): if every compare holds, every op is
 * applied at one revision; otherwise nothing is. At most TXN_OPS_MAX compares and TXN_OPS_MAX
 * ops; a put may not touch a key another op of the same transaction touches.
 */
export interface TxnRequest {
  compares: TxnCompare[];
  ops: TxnOp[];
}

/** Result of a transaction. */
export interface TxnResult {
  ok: boolean;
  /** The store's revision after the transaction: the revision of its writes when ok (unchanged if they changed nothing). */
  revision: number;
  /** When a compare failed: each compared key as it is now (null if missing), in compare order; empty when ok. */
  current: (KeyValue | null)[];
}

/**
 * The arbiter's operations. Failures: ARBITER_UNAVAILABLE (cannot reach a quorum; retriable),
 * LEASE_EXPIRED (the lease named is gone), INVALID_ARGUMENT (bad key, TTL or transaction).
 */
export interface Arbiter {
  /** Grants a lease of `ttlMs` (rounded up to whole seconds by etcd). */
  grantLease(ttlMs: number): Promise<Lease>;
  get(key: string): Promise<KeyValue | null>;
  /** Every key starting with `prefix`, sorted by key. */
  getPrefix(prefix: string): Promise<KeyValue[]>;
  /** Unconditional write; returns the new revision. */
  put(key: string, value: Buffer, options?: { leaseId?: string }): Promise<number>;
  /** Conditional write on the key's modRevision. */
  compareAndSet(key: string, value: Buffer, options: CasOptions): Promise<CasResult>;
  /** Conditional delete on the key's modRevision (omit to delete unconditionally). */
  delete(key: string, options?: { expectedModRevision?: number }): Promise<CasResult>;
  /** All-or-nothing writes under conditions on several keys (see TxnRequest). */
  txn(request: TxnRequest): Promise<TxnResult>;
  /**
   * Watches every key under `prefix` for changes after `fromRevision` (exclusive; omit for "from
   * now"). Events arrive in revision order. `onError` is called if the watch breaks for good.
   */
  watchPrefix(prefix: string, onEvent: (e: WatchEvent) => void, options?: { fromRevision?: number; onError?: (err: Error) => void }): Promise<Watch>;
  /** Closes connections; leases are not revoked (they expire). */
  close(): Promise<void>;
}
