/**
 * The two multi-tenant parts of the overload bench, against any gateway that speaks the contract
 * (the real one under `edgeq dev --keys`, or a fake in tests): fairness (three tenants, one of them
 * offering ten shares) and quota accuracy (a fixed quota under twice its rate from many
 * connections, counted in windows from the first send).
 */
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { hashApiKey } from '../../src/gateway/index.ts';
import { sleep } from './harness.ts';
import { putQuota } from './overload-deployment.ts';
import { admittedSentPerSec, destroyStats, mergeStats, percentileMs, runOpenLoop, type Flow, type FlowStats } from './overload-load.ts';
import { fairness, quotaWindows, type TenantFigures } from './overload-report.ts';
import { GatewaySender, type Sender } from './overload-sender.ts';

/** Bytes of each record's value (the bench:gateway single-record case uses the same). */
export const VALUE_BYTES = 100;
/** The fairness tenants, all of weight 1 (EDGEQ_TENANT_WEIGHTS=a=1,b=1,c=1). */
export const TENANTS = ['a', 'b', 'c'] as const;
export const TENANT_WEIGHTS = 'a=1,b=1,c=1';
/** Each fairness tenant's sender has its own sockets, so one tenant's queue never delays another's. */
export const TENANT_SOCKETS = 64;
/** Fairness: tenant a offers this many of its shares (M/3), b and c this share of theirs. */
export const NOISY_X = 10;
export const QUIET_X = 0.8;
/** Producers of the quota run, each its own Agent and sockets: "many concurrent connections". */
export const QUOTA_PRODUCERS = 16;
export const QUOTA_SOCKETS_PER_PRODUCER = 4;
/** The quota as a share of M, and the offered rate as a multiple of the quota. */
export const QUOTA_SHARE_OF_MAX = 0.3;
export const QUOTA_OFFERED_X = 2;
/** Bytes/s of the quota per record/s: far above a ~100 B record, so only the record rate binds. */
const QUOTA_BYTES_PER_RECORD = 1_000_000;

/** Where the load goes. */
export interface Target {
  gateway: string;
  topic: string;
}

/** A keys file in `dir` for tenants a, b, c (read, write and admin on every topic), and their keys. */
export async function tenantKeys(dir: string): Promise<{ file: string; keys: Record<string, string> }> {
  const keys = Object.fromEntries(TENANTS.map((t) => [t, `bench-${t}-${randomBytes(16).toString('hex')}`]));
  const file = join(dir, 'keys.json');
  const grants = [{ topic: '*', actions: ['read', 'write', 'admin'] }];
  await writeFile(file, JSON.stringify({ keys: TENANTS.map((t) => ({ sha256: hashApiKey(keys[t]!).toString('hex'), tenant: t, grants })) }));
  return { file, keys };
}

export interface FairnessResult {
  jain: number;
  jainByWeight: number;
  seconds: number;
  weights: string;
  tenants: (TenantFigures & { admitted: number; p99Ms: number | null; throttledShare: number; otherErrors: number; answers: Record<string, number> })[];
}

/** Three tenants side by side for `seconds`: a at NOISY_X shares of maxPerSec/3, b and c at QUIET_X. */
export async function fairnessRun(t: Target, keys: Record<string, string>, maxPerSec: number, seconds: number): Promise<FairnessResult> {
  const share = maxPerSec / TENANTS.length;
  const flows: Flow[] = TENANTS.map((tenant) => ({
    name: tenant,
    ratePerSec: Math.round(share * (tenant === 'a' ? NOISY_X : QUIET_X)),
    sender: new GatewaySender({ gateway: t.gateway, topic: t.topic, apiKey: keys[tenant]!, valueBytes: VALUE_BYTES, sockets: TENANT_SOCKETS }),
  }));
  let stats: FlowStats[];
  try {
    stats = await runOpenLoop(flows, { durationMs: seconds * 1000 });
  } finally {
    for (const f of flows) f.sender.close();
  }
  const f = fairness(stats.map((s) => ({ tenant: s.name, weight: 1, offeredPerSec: s.offeredPerSec, admittedPerSec: Math.round(admittedSentPerSec(s) * 10) / 10 })));
  const tenants = f.tenants.map((tf, i) => {
    const s = stats[i]!;
    return { ...tf, admitted: s.ok, p99Ms: percentileMs(s.latency, 99), throttledShare: Math.round((s.throttled / Math.max(1, s.due)) * 1000) / 1000, otherErrors: s.other + s.dropped, answers: s.answers };
  });
  destroyStats(stats);
  return { jain: f.jain, jainByWeight: f.jainByWeight, seconds, weights: TENANT_WEIGHTS, tenants };
}

export interface QuotaResult extends ReturnType<typeof quotaWindows> {
  offeredPerSec: number;
  producers: number;
  socketsPerProducer: number;
  answers: Record<string, number>;
  otherErrors: number;
  /** Admitted but sent after the last window (the client fell behind): in no window. */
  okAfterWindows: number;
}

/**
 * Puts a quota of QUOTA_SHARE_OF_MAX × maxPerSec records/s on (tenant, topic), waits `applyMs` for
 * the gateway to take it up, then offers QUOTA_OFFERED_X times it from QUOTA_PRODUCERS producers
 * for `windows` windows of `windowSec`, counting the admitted by send time.
 */
export async function quotaRun(t: Target, tenant: string, key: string, maxPerSec: number, o: { windowSec: number; windows: number; applyMs: number }): Promise<QuotaResult> {
  const quota = Math.max(1, Math.round(maxPerSec * QUOTA_SHARE_OF_MAX));
  await putQuota(t.gateway, key, tenant, t.topic, quota, Math.min(1_000_000_000_000, quota * QUOTA_BYTES_PER_RECORD));
  await sleep(o.applyMs);
  const perProducer = (quota * QUOTA_OFFERED_X) / QUOTA_PRODUCERS;
  const flows: Flow[] = Array.from({ length: QUOTA_PRODUCERS }, (_, i) => ({
    name: `p${i}`,
    ratePerSec: perProducer,
    sender: new GatewaySender({ gateway: t.gateway, topic: t.topic, apiKey: key, valueBytes: VALUE_BYTES, sockets: QUOTA_SOCKETS_PER_PRODUCER }) as Sender,
  }));
  let stats: FlowStats[];
  try {
    stats = await runOpenLoop(flows, { durationMs: o.windows * o.windowSec * 1000, windowMs: o.windowSec * 1000 });
  } finally {
    for (const f of flows) f.sender.close();
  }
  const all = mergeStats('quota', stats);
  const q = quotaWindows(all.okByWindow, quota, o.windowSec);
  const out = { ...q, offeredPerSec: Math.round(all.offeredPerSec), producers: QUOTA_PRODUCERS, socketsPerProducer: QUOTA_SOCKETS_PER_PRODUCER, answers: all.answers, otherErrors: all.other + all.dropped, okAfterWindows: all.okAfterWindows };
  destroyStats([...stats, all]);
  return out;
}
