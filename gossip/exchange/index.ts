/**
 * The exchange of global topics' records between regions: per (origin, topic, partition) a
 * replicator with its cursor in the local log, relays, bounded links, retention gaps, stalls,
 * acks=geo and the cursors every region publishes in the mesh.
 */
export type { ApplyResult, CellAccess, LocalOriginState, OriginFetchRequest, OriginFetchResult } from './cell-access.ts';
export { ClusterCells, type ClusterCellsOptions } from './cluster-cells.ts';
export { CursorBoard, cursorKey, parseCursorKey, type PartitionCursors } from './cursor-board.ts';
export { Exchange, type ExchangeMesh, type ExchangeOptions, type ExchangeTopic, type LinkStatus } from './exchange.ts';
export { EXCHANGE_DEFAULTS, exchangeLimits, type ExchangeLimits } from './limits.ts';
export { LINK_GRANT_BYTES_MIN, LinkBudget, type LinkGrant } from './link-budget.ts';
export { registerExchangeMetrics } from './metrics.ts';
export { Replicator, type GapEvent, type ReplicatorStatus } from './replicator.ts';
