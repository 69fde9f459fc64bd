/**
 * The admission limiter's settings of `edgeq gateway`, from its flags or, when a flag is absent,
 * the environment (the benchmark sets EDGEQ_LIMITER* and EDGEQ_TENANT_WEIGHTS on `edgeq dev`,
 * whose gateways inherit its environment). Checked before anything starts: a bad value is an
 * INVALID_CONFIG start-up error naming the flag (and the variable when it came from there).
 */
import { EdgeqError } from '../core/index.ts';
import {
  GRADIENT_DEFAULTS,
  LIMITER_CONTROLLERS,
  LIMITER_INTERVAL_MS_DEFAULT,
  LIMITER_INTERVAL_MS_MAX,
  LIMITER_INTERVAL_MS_MIN,
  LIMITER_INITIAL_PER_SEC_DEFAULT,
  LIMITER_PER_SEC_MAX,
  parseTenantWeights,
  SIGNAL_TARGETS_DEFAULT,
  type LimiterControllerName,
} from '../../ratelimit/index.ts';

/** The gateway flags these come from (commander's camelCase names). */
export interface LimiterFlags {
  limiter?: string;
  limiterIntervalMs?: string;
  limiterInitialPerSec?: string;
  limiterTargetP99Ms?: string;
  tenantWeights?: string;
}

/** What the gateway builds its limiter from. */
export interface LimiterSettings {
  controller: LimiterControllerName;
  intervalMs: number;
  initialPerSec: number;
  targetP99Ms: number;
  weights: Map<string, number>;
}

/** Longest produce p99 target: a minute is beyond any produce timeout. */
const TARGET_P99_MS_MAX = 60_000;

/** Reads and checks the limiter's flags and variables. */
export function limiterSettings(flags: LimiterFlags, env: NodeJS.ProcessEnv = process.env): LimiterSettings {
  /** The raw value and how to name it in an error: the flag, or the variable (for the flag). */
  const pick = (raw: string | undefined, flag: string, variable: string): { raw: string | undefined; name: string } => {
    if (raw !== undefined) return { raw, name: flag };
    const fromEnv = env[variable];
    return { raw: fromEnv === '' ? undefined : fromEnv, name: `${variable} (${flag})` };
  };
  const int = (p: { raw: string | undefined; name: string }, fallback: number, min: number, max: number): number => {
    if (p.raw === undefined) return fallback;
    const text = p.raw.trim();
    const n = Number(text);
    if (!/^\d+$/.test(text) || !Number.isSafeInteger(n) || n < min || n > max) {
      throw new EdgeqError('INVALID_CONFIG', `${p.name} must be an integer in [${min}, ${max}], got ${JSON.stringify(p.raw)}`, { details: { key: p.name } });
    }
    return n;
  };
  const kind = pick(flags.limiter, '--limiter', 'EDGEQ_LIMITER');
  const controller = (kind.raw?.trim() ?? 'edgeq') as LimiterControllerName;
  if (!(LIMITER_CONTROLLERS as readonly string[]).includes(controller)) {
    throw new EdgeqError('INVALID_CONFIG', `${kind.name} must be one of ${LIMITER_CONTROLLERS.join(', ')}, got ${JSON.stringify(kind.raw)}`, { details: { key: kind.name } });
  }
  const weights = pick(flags.tenantWeights, '--tenant-weights', 'EDGEQ_TENANT_WEIGHTS');
  return {
    controller,
    intervalMs: int(pick(flags.limiterIntervalMs, '--limiter-interval-ms', 'EDGEQ_LIMITER_INTERVAL_MS'), LIMITER_INTERVAL_MS_DEFAULT, LIMITER_INTERVAL_MS_MIN, LIMITER_INTERVAL_MS_MAX),
    initialPerSec: int(pick(flags.limiterInitialPerSec, '--limiter-initial-per-sec', 'EDGEQ_LIMITER_INITIAL_PER_SEC'), LIMITER_INITIAL_PER_SEC_DEFAULT, GRADIENT_DEFAULTS.minPerSec, LIMITER_PER_SEC_MAX),
    targetP99Ms: int(pick(flags.limiterTargetP99Ms, '--limiter-target-p99-ms', 'EDGEQ_LIMITER_TARGET_P99_MS'), SIGNAL_TARGETS_DEFAULT.produceP99Ms, 1, TARGET_P99_MS_MAX),
    weights: weights.raw === undefined ? new Map() : parseTenantWeights(weights.raw, weights.name),
  };
}
