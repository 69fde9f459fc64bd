/**
 * Exact consumer failover between regions (docs/geo.md): group positions as version vectors
 * published in the mesh, their translation into each region's log, and the failover itself.
 */
export { ClusterGeoCell } from './cluster-geo-cell.ts';
export { failoverGroup, type FailoverDeps, type FailoverResult } from './failover.ts';
export type { GeoCell, GroupCommit, LogChunk } from './geo-cell.ts';
export { GeoGroups, type GeoGroupsOptions } from './geo-groups.ts';
export { groupKey, parseGroupEntry, parseGroupKey, type GroupEntry, type PublishedPosition } from './group-entry.ts';
export { GroupPublisher, type GroupPublisherOptions } from './group-publisher.ts';
export { GroupTranslator, toCommits, type GroupTranslatorOptions, type TranslatedPartition } from './group-translator.ts';
export * from './limits.ts';
export { scanLog, type ScanEnd } from './log-scan.ts';
export { advanceVector, spansOf, Translation, vectorCovers, type BatchSpan } from './vector.ts';
