/**
 * The bounds of consumer failover between regions (docs/geo.md), named, with why they are what
 * they are.
 */

/**
 * Groups one region publishes to the mesh. Each costs one state entry (at most
 * GEO_GROUP_ENTRY_BYTES_MAX) in every member: 256 groups × 3 regions = 768 of the mesh's 4,096
 * entries and ≤ 768 KiB of its 1 MiB, beside the cursors (regions × topics × partitions).
 */
export const GEO_GROUPS_MAX = 256;
/** Bytes of one published group entry: the mesh's own bound on a state value (stateValueBytesMax). */
export const GEO_GROUP_ENTRY_BYTES_MAX = 1024;
/** How often the publisher and the translator look (the exchange's own watch period). */
export const GEO_INTERVAL_MS = 1_000;
/** Bytes one header scan reads per fetch: 1 MiB, the exchange's fetch size. */
export const GEO_SCAN_FETCH_BYTES_MAX = 1024 * 1024;
/** Fetches of one scan: 4,096 × 1 MiB = 4 GiB of log per partition and pass at most. */
export const GEO_SCAN_FETCHES_MAX = 4_096;
/** Bound on one request of the publisher or translator to the local cell. */
export const GEO_REQUEST_TIMEOUT_MS = 10_000;
