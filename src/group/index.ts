/**
 * Consumer groups: the broker-side coordinator (membership, rebalances, committed offsets in an
 * internal log) and the pieces clients share with it (assignors, consumer protocol bytes).
 */
export * from './assignors/index.ts';
export { compareIds } from './assignors/assignor.ts';
export * from './consumer-protocol.ts';
export * from './coordinator-config.ts';
export { GroupCoordinator, type CoordinatorDeps, type RequestContext } from './coordinator.ts';
export type { GroupState } from './group.ts';
export {
  OffsetStore,
  OFFSET_STORE_DEFAULTS,
  offsetKey,
  offsetValue,
  type CommittedOffset,
  type OffsetCommitEntry,
  type OffsetStoreOptions,
  type OffsetLog,
  type PartitionOffset,
} from './offset-store.ts';
