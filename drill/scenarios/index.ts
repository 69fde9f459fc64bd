/** The seven drills: their faults, and a request checked and scheduled against the deployment. */
export { SCENARIO_FAULTS, RESTART_WAIT_MS, DEGRADE_LATENCY_FACTOR, DEGRADE_LATENCY_ADD_MIN_MS, DEGRADE_LOSS_RATE } from './specs.ts';
export {
  checkDrillRequest,
  planDrill,
  DRILL_DURATION_S_DEFAULT,
  DRILL_DURATION_S_MAX,
  DRILL_DURATION_S_MIN,
  DRILL_RATE_DEFAULT,
  FAULT_AT_SHARE,
  FAULT_HOLD_SHARE,
  SEED_MAX,
  type DrillPlan,
  type DrillRequest,
} from './plan.ts';
