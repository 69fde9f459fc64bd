/** The randomized fault campaign (issue 16): its faults, the per-round schedule, the flush policies' guarantee, and a round. */
export { campaignFaults, RoundLedger, CAMPAIGN_FAULT_NAMES, CHAOS_RESTART_WAIT_MS, ELECTION_POLL_MS, ELECTION_WATCH_MS, type CampaignFaultName, type PowerLossEvent } from './faults.ts';
export { CHAOS_FAULT_NAMES, chaosFaultSpecs, FAULT_IMPACT, type ChaosFaultName, type FaultImpact } from './catalogue.ts';
export {
  eligibleFaults,
  roundPlan,
  roundSchedule,
  roundSeedOf,
  scheduleViolation,
  FAULT_AT_MS_MIN,
  FAULT_END_MARGIN_MS,
  FAULT_HOLD_MS_MAX,
  FAULT_HOLD_MS_MIN,
  OVERLAP_MARGIN_MS,
  ROUND_DURATION_MS,
  ROUND_FAULTS_MAX,
  ROUND_FAULTS_MIN,
  SCHEDULE_DRAWS_MAX,
  type PlannedFault,
} from './schedule.ts';
export { cellsThatLostPower, roundVerdict, FLUSH_POLICIES, type FlushPolicy, type RoundVerdict } from './guarantee.ts';
export { describePlan, runRound, summarize, ROUND_CONVERGE_MS, ROUND_RATE, type CampaignSummary, type RoundOptions, type RoundResult } from './round.ts';
export { flipBits, lastSegment, partitionFolder, truncateTail, FLIP_BYTES, TRUNCATE_BYTES_MAX, type Corruption } from './log-files.ts';
