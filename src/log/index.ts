/**
 * The segment log: record batches, segments with sparse indexes, appends with group commit,
 * reads of stored bytes, retention and crash recovery.
 */
export * from './batch-format.ts';
export * from './batch.ts';
export { scanBatchHeaders, HEADER_SCAN_READ_BYTES } from './header-scan.ts';
export { mergeable, mergeBatches, batchAttributes } from './batch-merge.ts';
export * from './record.ts';
export * from './compression.ts';
export { zigzag, unzigzag, varintSize, writeVarint, readVarint, readInt64, writeInt64, type VarintRead } from './varint.ts';
export type { Storage, StorageFile } from './storage.ts';
export { isDiskFull } from './storage.ts';
export { FsStorage } from './fs-storage.ts';
export { MemoryStorage, type FaultOp } from './memory-storage.ts';
export { PowerLossStorage, type PowerLossStorageOptions } from './power-loss-storage.ts';
export { applyPowerLoss, type PowerLossOptions, type PowerLossReport } from './power-loss-rewind.ts';
export { FAULT_STORAGE_ENV, faultStorageKind, storageFromEnv, type FaultStorageKind } from './fault-storage.ts';
export { FilePool, type FileLease, type FilePoolStats } from './file-pool.ts';
export { LOG_DEFAULTS, FLUSH_POLICIES, resolveLogConfig, type LogConfig, type FlushPolicy } from './log-config.ts';
export { CHECKPOINT_FILE, readCheckpoint, type RecoveryCheckpoint } from './checkpoint.ts';
export { CORRUPT_SUFFIX, isCorruptName } from './corrupt-aside.ts';
export { Segment, segmentStem, parseSegmentName, scanBatches, type ScannedBatch, type ScanResult } from './segment.ts';
export {
  PartitionLog,
  type AppendOptions,
  type AppendGuard,
  type AppendResult,
  type LogDeps,
  type LogObserver,
  type LogRecoveryReport,
  type ReadOptions,
  type ReadResult,
} from './partition-log.ts';
