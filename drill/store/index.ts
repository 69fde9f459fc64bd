/** Drill reports kept in the deployment's data folder (listed and fetched by the gateways' /v1/drills). */
export { DrillStore, DRILL_FILE_BYTES_MAX, DRILL_ID, DRILL_REPORTS_MAX, type DrillSummary, type StoredDrill, type StoredProgress } from './store.ts';
