/** The drill report store: the reports and progress of drills in `<dataDir>/drills/`, read by the gateway's /v1/drills. */
export { checkDrillId, newDrillId, DRILL_ID_PATTERN, DRILL_SCENARIO_PATTERN } from './id.ts';
export { DrillStore, drillStoreOf, saveDrill, saveDrillProgress, DRILL_FILE_BYTES_MAX, DRILL_REPORTS_MAX, type DrillSummary, type StoredDrill, type StoredProgress } from './store.ts';
