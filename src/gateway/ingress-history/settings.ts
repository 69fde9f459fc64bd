/** The gateway's ingress-history flags, checked before anything is opened. */
import { EdgeqError } from '../../core/index.ts';

export const INGRESS_STEP_MS_DEFAULT = 60_000;
export const INGRESS_STEP_MS_MIN = 100;
export const INGRESS_STEP_MS_MAX = 3_600_000;
/** 28 days. */
export const INGRESS_RETENTION_MS_DEFAULT = 2_419_200_000;
/** A history shorter than this many steps could not feed a forecast at all. */
export const INGRESS_RETENTION_STEPS_MIN = 10;

export interface IngressHistorySettings {
  stepMs: number;
  retentionMs: number;
}

/** From the flags (or the environment); INVALID_CONFIG naming the key for a bad one. */
export function ingressHistorySettings(flags: { ingressStepMs?: string; ingressRetentionMs?: string }, env: NodeJS.ProcessEnv = process.env): IngressHistorySettings {
  const stepMs = intOf(flags.ingressStepMs ?? env.EDGEQ_INGRESS_STEP_MS, 'ingressStepMs', '--ingress-step-ms', INGRESS_STEP_MS_DEFAULT);
  if (stepMs < INGRESS_STEP_MS_MIN || stepMs > INGRESS_STEP_MS_MAX) {
    throw new EdgeqError('INVALID_CONFIG', `--ingress-step-ms must be in [${INGRESS_STEP_MS_MIN}, ${INGRESS_STEP_MS_MAX}], got ${stepMs}`, { details: { key: 'ingressStepMs', value: stepMs } });
  }
  const retentionMs = intOf(flags.ingressRetentionMs ?? env.EDGEQ_INGRESS_RETENTION_MS, 'ingressRetentionMs', '--ingress-retention-ms', INGRESS_RETENTION_MS_DEFAULT);
  if (retentionMs < INGRESS_RETENTION_STEPS_MIN * stepMs) {
    throw new EdgeqError('INVALID_CONFIG', `--ingress-retention-ms must be at least ${INGRESS_RETENTION_STEPS_MIN} steps (${INGRESS_RETENTION_STEPS_MIN * stepMs} ms at --ingress-step-ms ${stepMs}), got ${retentionMs}`, {
      details: { key: 'ingressRetentionMs', value: retentionMs },
    });
  }
  return { stepMs, retentionMs };
}

function intOf(raw: string | undefined, key: string, flag: string, fallback: number): number {
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(n)) throw new EdgeqError('INVALID_CONFIG', `${flag} must be an integer, got ${JSON.stringify(raw)}`, { details: { key, value: raw } });
  return n;
}
