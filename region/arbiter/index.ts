/** The arbiter: one interface, three implementations (memory, embedded process, etcd). */
export type { Arbiter, CasOptions, CasResult, KeyValue, Lease, TxnCompare, TxnOp, TxnRequest, TxnResult, Watch, WatchEvent } from './arbiter.ts';
export { MemoryArbiter, type MemoryArbiterOptions, HISTORY_EVENTS_MAX_DEFAULT, KEYS_MAX_DEFAULT, LEASES_MAX_DEFAULT, WATCHES_MAX_DEFAULT } from './memory-arbiter.ts';
export { EmbeddedArbiter, type EmbeddedArbiterOptions, REQUEST_TIMEOUT_MS_DEFAULT } from './embedded-arbiter.ts';
export { EmbeddedArbiterServer, type EmbeddedArbiterServerOptions, SNAPSHOT_FILE_NAME } from './embedded-server.ts';
export { EtcdArbiter, type EtcdArbiterOptions, type EtcdTlsOptions } from './etcd-arbiter.ts';
export { type ArbiterSnapshot, readSnapshotFile, writeSnapshotFile } from './snapshot.ts';
export { isCompactedError, NO_LEASE, KEY_BYTES_MAX, VALUE_BYTES_MAX, LEASE_TTL_MS_MAX, TXN_OPS_MAX, TXN_BYTES_MAX } from './validation.ts';
