/**
 * Every fault a campaign round draws from: the seven drill faults (drill/scenarios, by name) and
 * the campaign's own (faults.ts), each with what it takes down, which is what the schedule's
 * safety rules reason about (schedule.ts). The impact is data, so the rules are tested without a
 * deployment.
 */
import { SCENARIO_FAULTS } from '../scenarios/index.ts';
import type { FaultSpec, ScenarioName } from '../runner/index.ts';
import { campaignFaults, type CampaignFaultName, type RoundLedger } from './faults.ts';

export type ChaosFaultName = ScenarioName | CampaignFaultName;

/** What a fault takes down in its region while it is in place. */
export interface FaultImpact {
  /** Brokers of the region's cell it takes down (or stops): a count, or `all` of them. */
  readonly brokers: number | 'all';
  readonly arbiter: boolean;
  readonly gateway: boolean;
  /** It changes links (between regions: it conflicts with other link faults anywhere). */
  readonly links: boolean;
  /** It reads the region's cell through the gateway when injected (so the gateway must be up). */
  readonly needsGateway: boolean;
  /** It picks its victims through the round's ledger (never a process another fault holds). */
  readonly ledgerAware: boolean;
  /** Smallest deployment it makes sense on. */
  readonly regionsMin: number;
  readonly brokersMin: number;
}

const impact = (i: Partial<FaultImpact>): FaultImpact => ({ brokers: 0, arbiter: false, gateway: false, links: false, needsGateway: false, ledgerAware: false, regionsMin: 1, brokersMin: 1, ...i });

/** The impact of every fault kind. */
export const FAULT_IMPACT: Readonly<Record<ChaosFaultName, FaultImpact>> = {
  'broker-kill': impact({ brokers: 1, needsGateway: true, brokersMin: 2 }),
  'leader-kill': impact({ brokers: 1, needsGateway: true }),
  'region-isolate': impact({ links: true, regionsMin: 2 }),
  'region-kill': impact({ brokers: 'all', arbiter: true, gateway: true }),
  'arbiter-loss': impact({ brokers: 1, arbiter: true, needsGateway: true }),
  'link-degrade': impact({ links: true, regionsMin: 2 }),
  'gateway-kill': impact({ gateway: true }),
  'pause-broker': impact({ brokers: 1, needsGateway: true, ledgerAware: true }),
  'pause-gateway': impact({ gateway: true, ledgerAware: true }),
  'kill-in-election': impact({ brokers: 2, needsGateway: true, ledgerAware: true, brokersMin: 2 }),
  'power-loss-broker': impact({ brokers: 1, ledgerAware: true }),
  'power-loss-cell': impact({ brokers: 'all', ledgerAware: true }),
  'corrupt-truncate': impact({ brokers: 1, needsGateway: true, ledgerAware: true, brokersMin: 2 }),
  'corrupt-flip': impact({ brokers: 1, needsGateway: true, ledgerAware: true, brokersMin: 2 }),
};

/** Every fault kind, in a fixed order (the schedule draws from it by index). */
export const CHAOS_FAULT_NAMES = Object.keys(FAULT_IMPACT) as ChaosFaultName[];

/** The fault specs of one round: the drill faults as they are, the campaign's bound to `ledger`. */
export function chaosFaultSpecs(ledger: RoundLedger): Readonly<Record<ChaosFaultName, FaultSpec>> {
  return { ...SCENARIO_FAULTS, ...campaignFaults(ledger) };
}
