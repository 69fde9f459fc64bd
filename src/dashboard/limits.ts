/**
 * The dashboard's bounds: how often it samples, how much history it keeps, how many live
 * streams one gateway serves. Every buffer of the dashboard is one of these sizes.
 */

/** One sample of every region per second (the page updates at the same pace). */
export const DASHBOARD_SAMPLE_MS = 1_000;
/** Fine history: an hour of 1 s samples per region (the 5 min and 1 h ranges). */
export const DASHBOARD_FINE_POINTS_MAX = 3_600;
/** Coarse history: a day of 1 min points per region (the 24 h range), each the mean of its samples. */
export const DASHBOARD_COARSE_STEP_MS = 60_000;
export const DASHBOARD_COARSE_POINTS_MAX = 1_440;
/** Regions kept (the mesh bounds regions far lower; a bound all the same). */
export const DASHBOARD_REGIONS_MAX = 32;
/** Live streams one gateway serves at once; the next is refused with 429 THROTTLED. */
export const DASHBOARD_STREAMS_MAX = 16;

/** The history ranges `GET /v1/dashboard/history?range=` takes, in ms. */
export const DASHBOARD_RANGES: Readonly<Record<string, number>> = Object.freeze({ '5m': 5 * 60_000, '1h': 3_600_000, '24h': 86_400_000 });
