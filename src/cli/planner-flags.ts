/**
 * The forecast planner's settings of `edgeq gateway`, from its flags or, when a flag is absent,
 * the environment (`edgeq dev`'s gateways inherit its environment; the tests and the live
 * benchmark set them there). Checked before anything starts: a bad value is an INVALID_CONFIG
 * start-up error naming the flag (and the variable when it came from there). The planner's step
 * is the ingress history's (`--ingress-step-ms`).
 */
import { EdgeqError } from '../core/index.ts';
import { PLAN_HEADROOM_DEFAULT, PLAN_HEADROOM_MAX, PLAN_INSTANCES_MAX } from '../../forecast/planner/plan-arithmetic.ts';
import { LIMITER_PER_SEC_MAX } from '../../ratelimit/index.ts';

/** The gateway flags these come from (commander's camelCase names). */
export interface PlannerFlags {
  planner?: string;
  plannerLeadMs?: string;
  plannerSeasonSteps?: string;
  plannerPerBroker?: string;
  plannerPerGateway?: string;
  plannerHeadroom?: string;
  plannerMaxInstances?: string;
  plannerRetrainMs?: string;
  plannerPrewarm?: string;
}

/** What the gateway builds its planner from (null: `--planner off`). */
export interface PlannerSettings {
  leadMs: number;
  /** Steps per season; null: one day of steps. */
  seasonSteps: number | null;
  perInstance: { broker: number; gateway: number };
  headroom: number;
  maxInstances: number;
  retrainEveryMs: number;
  /** The plan lifts the limiter's capacity ahead of forecast peaks. */
  prewarm: boolean;
}

/** Records/s one broker and one gateway serve, by default: the limiter's own default capacity. */
export const PLANNER_PER_INSTANCE_DEFAULT = 20_000;
export const PLANNER_LEAD_MS_DEFAULT = 300_000;
export const PLANNER_RETRAIN_MS_DEFAULT = 86_400_000;
/** Most steps in a season: four weeks of minutes, the history's retention at its default step. */
const SEASON_STEPS_MAX = 40_320;
const DAY_MS = 86_400_000;

/** Reads and checks the planner's flags and variables. */
export function plannerSettings(flags: PlannerFlags, env: NodeJS.ProcessEnv = process.env): PlannerSettings | null {
  const pick = (raw: string | undefined, flag: string, variable: string): { raw: string | undefined; name: string } => {
    if (raw !== undefined) return { raw, name: flag };
    const fromEnv = env[variable];
    return { raw: fromEnv === '' ? undefined : fromEnv, name: `${variable} (${flag})` };
  };
  const bad = (p: { raw: string | undefined; name: string }, what: string) =>
    new EdgeqError('INVALID_CONFIG', `${p.name} must be ${what}, got ${JSON.stringify(p.raw)}`, { details: { key: p.name } });
  const int = (p: { raw: string | undefined; name: string }, fallback: number, min: number, max: number): number => {
    if (p.raw === undefined) return fallback;
    const text = p.raw.trim();
    const n = Number(text);
    if (!/^\d+$/.test(text) || !Number.isSafeInteger(n) || n < min || n > max) throw bad(p, `an integer in [${min}, ${max}]`);
    return n;
  };
  const onOff = (p: { raw: string | undefined; name: string }, fallback: boolean): boolean => {
    if (p.raw === undefined) return fallback;
    const v = p.raw.trim();
    if (v !== 'on' && v !== 'off') throw bad(p, 'on or off');
    return v === 'on';
  };
  if (!onOff(pick(flags.planner, '--planner', 'EDGEQ_PLANNER'), true)) return null;
  const headroomP = pick(flags.plannerHeadroom, '--planner-headroom', 'EDGEQ_PLANNER_HEADROOM');
  let headroom = PLAN_HEADROOM_DEFAULT;
  if (headroomP.raw !== undefined) {
    const text = headroomP.raw.trim();
    headroom = /^\d+(\.\d+)?$/.test(text) ? Number(text) : NaN;
    if (!(headroom >= 0 && headroom <= PLAN_HEADROOM_MAX)) throw bad(headroomP, `a fraction in [0, ${PLAN_HEADROOM_MAX}]`);
  }
  const season = pick(flags.plannerSeasonSteps, '--planner-season-steps', 'EDGEQ_PLANNER_SEASON_STEPS');
  return {
    leadMs: int(pick(flags.plannerLeadMs, '--planner-lead-ms', 'EDGEQ_PLANNER_LEAD_MS'), PLANNER_LEAD_MS_DEFAULT, 1, DAY_MS),
    seasonSteps: season.raw === undefined ? null : int(season, 0, 2, SEASON_STEPS_MAX),
    perInstance: {
      broker: int(pick(flags.plannerPerBroker, '--planner-per-broker', 'EDGEQ_PLANNER_PER_BROKER'), PLANNER_PER_INSTANCE_DEFAULT, 1, LIMITER_PER_SEC_MAX),
      gateway: int(pick(flags.plannerPerGateway, '--planner-per-gateway', 'EDGEQ_PLANNER_PER_GATEWAY'), PLANNER_PER_INSTANCE_DEFAULT, 1, LIMITER_PER_SEC_MAX),
    },
    headroom,
    maxInstances: int(pick(flags.plannerMaxInstances, '--planner-max-instances', 'EDGEQ_PLANNER_MAX_INSTANCES'), PLAN_INSTANCES_MAX, 1, PLAN_INSTANCES_MAX),
    retrainEveryMs: int(pick(flags.plannerRetrainMs, '--planner-retrain-ms', 'EDGEQ_PLANNER_RETRAIN_MS'), PLANNER_RETRAIN_MS_DEFAULT, 1000, 30 * DAY_MS),
    prewarm: onOff(pick(flags.plannerPrewarm, '--planner-prewarm', 'EDGEQ_PLANNER_PREWARM'), true),
  };
}

/** The planner's flags, added to `edgeq gateway`. */
export const PLANNER_OPTIONS: readonly [string, string][] = [
  ['--planner <on|off>', 'forecast pre-scaling from the ingress history: GET /v1/capacity, the planner gauges, the mesh forecast slot (EDGEQ_PLANNER, default on)'],
  ['--planner-lead-ms <n>', 'how long a new instance takes to be ready: the plan for t is decided at t - lead (EDGEQ_PLANNER_LEAD_MS, default 300000)'],
  ['--planner-season-steps <n>', 'steps per season (EDGEQ_PLANNER_SEASON_STEPS, default one day of steps)'],
  ['--planner-per-broker <n>', 'records/s one broker serves, for the plan (EDGEQ_PLANNER_PER_BROKER, default 20000)'],
  ['--planner-per-gateway <n>', 'records/s one gateway serves, for the plan (EDGEQ_PLANNER_PER_GATEWAY, default 20000)'],
  ['--planner-headroom <f>', `fraction over the P90 the plan provisions (EDGEQ_PLANNER_HEADROOM, default ${PLAN_HEADROOM_DEFAULT})`],
  ['--planner-max-instances <n>', `most instances of a component the plan asks for (EDGEQ_PLANNER_MAX_INSTANCES, default ${PLAN_INSTANCES_MAX})`],
  ['--planner-retrain-ms <n>', 'scheduled retraining interval (EDGEQ_PLANNER_RETRAIN_MS, default 86400000); drift retrains earlier'],
  ['--planner-prewarm <on|off>', 'lift the limiter capacity to the plan ahead of forecast peaks (EDGEQ_PLANNER_PREWARM, default on)'],
];
