/** The drill runner: a checked run with faults at their moments, healed on every way out. */
export { runChecked, RECOVER_WAIT_MS_MAX, CONVERGE_POLL_MS, CONVERGE_TIMEOUT_MS_DEFAULT, PROGRESS_EVERY_MS, RUN_DURATION_MS_MAX, RUN_FAULTS_MAX, RUN_PARTITIONS } from './run.ts';
export { recoverMs, unavailableMs, UNAVAILABLE_GAP_MS } from './timings.ts';
export { fetchCell, CELL_CALL_MS } from './cell-view.ts';
export * from './types.ts';
