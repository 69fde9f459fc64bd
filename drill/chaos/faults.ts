/**
 * The campaign-only faults (issue 16) as fault specs: SIGSTOP/SIGCONT of a broker or a gateway,
 * kill -9 during a leader election, power loss of one broker or of a whole cell, and corruption
 * of one follower's log (a tail cut, or flipped bits). They are made per round by
 * `campaignFaults(ledger)`: the ledger is the round's shared state, so two faults of one round
 * never pick the same process (a paused broker that another fault kills could not be continued),
 * and the round's power losses are known afterwards (the flush-policy rule of guarantee.ts).
 */
import { EdgeqError } from '../../src/core/index.ts';
import { applyPowerLoss } from '../../src/log/index.ts';
import type { DeploymentBroker, DeploymentProcess, DeploymentRegion } from '../faults/index.ts';
import type { CellPartitionView, FaultContext, FaultSpec, InjectedFault } from '../runner/index.ts';
import { flipBits, lastSegment, partitionFolder, truncateTail, type Corruption } from './log-files.ts';

/** Bound on seeing the election under way after the leader's SIGKILL (its lease TTL, then a CAS; 2 loaded cores). */
export const ELECTION_WATCH_MS = 15_000;
/** Pause between looks at the cell while watching for the election. */
export const ELECTION_POLL_MS = 50;
/** Bound on a killed process being listed as running again (the supervisor's backoff, then a broker's log replay). */
export const CHAOS_RESTART_WAIT_MS = 60_000;
const RESTART_POLL_MS = 200;

/** One power loss of a round: which brokers, in which region, from when to when (ms since the epoch). */
export interface PowerLossEvent {
  readonly region: string;
  readonly brokers: readonly string[];
  /** Every broker of the region's cell lost power at once. */
  readonly wholeCell: boolean;
  readonly atMs: number;
  healedAtMs: number | null;
}

/** The round's shared state: processes claimed by a fault in place, power losses, corruptions. */
export class RoundLedger {
  readonly claimed = new Set<string>();
  readonly powerLosses: PowerLossEvent[] = [];
  readonly corruptions: { readonly broker: string; readonly corruption: Corruption }[] = [];
}

/** The campaign's own fault kinds, by name. */
export const CAMPAIGN_FAULT_NAMES = ['pause-broker', 'pause-gateway', 'kill-in-election', 'power-loss-broker', 'power-loss-cell', 'corrupt-truncate', 'corrupt-flip'] as const;
export type CampaignFaultName = (typeof CAMPAIGN_FAULT_NAMES)[number];

function regionOf(ctx: FaultContext): DeploymentRegion {
  const r = ctx.deployment.regions.find((x) => x.region === ctx.region);
  if (!r) throw new EdgeqError('INVALID_ARGUMENT', `unknown region "${ctx.region}"`, { details: { field: 'region' } });
  return r;
}

async function processNamed(ctx: FaultContext, name: string): Promise<DeploymentProcess> {
  const p = (await ctx.driver.processes()).find((x) => x.name === name);
  if (!p) throw new EdgeqError('NOT_FOUND', `the deployment runs no process named ${name}`, { details: { process: name } });
  return p;
}

/** Running, not held, not claimed by another fault of the round: a process a fault may take. */
async function free(ctx: FaultContext, ledger: RoundLedger, names: readonly string[]): Promise<DeploymentProcess[]> {
  const procs = await ctx.driver.processes();
  return names.map((n) => procs.find((p) => p.name === n)).filter((p): p is DeploymentProcess => !!p && p.pid !== null && !p.held && !ledger.claimed.has(p.name));
}

function pick<T>(ctx: FaultContext, pool: readonly T[], what: string): T {
  if (pool.length === 0) throw new EdgeqError('INVALID_ARGUMENT', `${ctx.region} has no ${what} free for this fault`, { details: { region: ctx.region } });
  return pool[Math.floor(ctx.random() * pool.length)]!;
}

/** Waits until the supervisor lists `name` running again. */
async function running(ctx: FaultContext, name: string): Promise<void> {
  const deadline = Date.now() + CHAOS_RESTART_WAIT_MS;
  for (;;) {
    const p = await processNamed(ctx, name);
    if (p.pid !== null && !p.held) return;
    if (Date.now() >= deadline) throw new EdgeqError('TIMEOUT', `${name} is not running again ${CHAOS_RESTART_WAIT_MS} ms after it was killed`, { details: { process: name } });
    await new Promise((r) => setTimeout(r, RESTART_POLL_MS));
  }
}

/** The checked partitions of the region's cell, busiest first. */
async function checkedPartitions(ctx: FaultContext): Promise<CellPartitionView[]> {
  const names = new Set(ctx.topics.map((t) => t.name));
  const cell = await ctx.cell(ctx.region);
  return cell.partitions.filter((p) => names.has(p.topic)).sort((a, b) => b.highWatermark - a.highWatermark || a.topic.localeCompare(b.topic) || a.partition - b.partition);
}

/** A fault that holds `names` for the round, and gives them back at its heal (also when the heal fails). */
function claiming(ledger: RoundLedger, names: readonly string[], f: Omit<InjectedFault, 'heal'>, heal: () => Promise<void>): InjectedFault {
  let healed = false;
  return {
    ...f,
    heal: async () => {
      if (healed) return;
      healed = true;
      try {
        await heal();
      } finally {
        for (const n of names) ledger.claimed.delete(n);
      }
    },
  };
}

function pauseOf(ledger: RoundLedger, role: 'broker' | 'gateway'): FaultSpec {
  const name = `pause-${role}`;
  return {
    name,
    async inject(ctx) {
      const r = regionOf(ctx);
      const parts = role === 'broker' ? await checkedPartitions(ctx) : [];
      const p = pick(ctx, await free(ctx, ledger, role === 'broker' ? r.brokers.map((b) => b.name) : [r.gatewayName]), role);
      ledger.claimed.add(p.name);
      await ctx.driver.pause(p);
      ctx.mark('fault.pause', p.name);
      const id = r.brokers.find((b) => b.name === p.name)?.id;
      const leads = id !== undefined && parts.some((x) => x.leader === id);
      return claiming(ledger, [p.name], { name, region: ctx.region, detect: role === 'gateway' ? { memberOf: ctx.region } : leads ? { leader: true } : null, affected: [ctx.region] }, () => ctx.driver.resume(p));
    },
  };
}

function killInElection(ledger: RoundLedger): FaultSpec {
  return {
    name: 'kill-in-election',
    async inject(ctx) {
      const r = regionOf(ctx);
      const freeNames = new Set((await free(ctx, ledger, r.brokers.map((b) => b.name))).map((p) => p.name));
      const target = (await checkedPartitions(ctx)).find((p) => p.leader !== null && freeNames.has(r.brokers.find((b) => b.id === p.leader)?.name ?? ''));
      if (!target) throw new EdgeqError('BROKER_NOT_AVAILABLE', `no checked partition of ${ctx.region} has a free leader to kill`);
      const first = r.brokers.find((b) => b.id === target.leader)!;
      ledger.claimed.add(first.name);
      const killed = [first.name];
      await ctx.driver.kill(await processNamed(ctx, first.name));
      ctx.mark('fault.kill', `${first.name}, leader of ${target.topic}-${target.partition} at epoch ${target.epoch}`);
      // The election is under way once the partition names no leader, another one, or a later epoch.
      const deadline = Date.now() + ELECTION_WATCH_MS;
      let seen: CellPartitionView | null = null;
      while (Date.now() < deadline && !ctx.signal.aborted) {
        const now = (await ctx.cell(ctx.region).catch(() => null))?.partitions.find((p) => p.topic === target.topic && p.partition === target.partition);
        if (now && (now.leader !== target.leader || now.epoch > target.epoch)) {
          seen = now;
          break;
        }
        await new Promise((res) => setTimeout(res, ELECTION_POLL_MS));
      }
      if (seen) {
        // The new leader if there is one (kill it right after it won), else another ISR member racing for it.
        const isr = seen.isr.map((id) => r.brokers.find((b) => b.id === id)).filter((b): b is DeploymentBroker => !!b && b.name !== first.name);
        const candidates = (await free(ctx, ledger, isr.map((b) => b.name))).map((p) => p.name);
        const newLeader = r.brokers.find((b) => b.id === seen.leader && b.name !== first.name)?.name;
        const second = newLeader && candidates.includes(newLeader) ? newLeader : candidates.length > 0 ? pick(ctx, candidates, 'ISR member') : null;
        if (second) {
          ledger.claimed.add(second);
          killed.push(second);
          await ctx.driver.kill(await processNamed(ctx, second));
          ctx.mark('fault.kill', `${second} during the election of ${target.topic}-${target.partition} (leader ${seen.leader ?? 'none'}, epoch ${seen.epoch})`);
        }
      } else ctx.mark('fault.note', `no election of ${target.topic}-${target.partition} seen within ${ELECTION_WATCH_MS} ms: one kill only`);
      return claiming(ledger, killed, { name: 'kill-in-election', region: ctx.region, detect: { leader: true }, affected: [ctx.region] }, async () => {
        for (const n of killed) await running(ctx, n);
      });
    },
  };
}

function powerLoss(ledger: RoundLedger, wholeCell: boolean): FaultSpec {
  const name = wholeCell ? 'power-loss-cell' : 'power-loss-broker';
  return {
    name,
    async inject(ctx) {
      if (ctx.deployment.faultStorage !== 'power-loss') {
        throw new EdgeqError('INVALID_ARGUMENT', `${name} needs the brokers started with EDGEQ_FAULT_STORAGE=power-loss (the deployment has ${ctx.deployment.faultStorage})`, { details: { field: 'faultStorage' } });
      }
      const r = regionOf(ctx);
      const pool = await free(ctx, ledger, r.brokers.map((b) => b.name));
      if (wholeCell && pool.length !== r.brokers.length) throw new EdgeqError('INVALID_ARGUMENT', `${ctx.region}'s cell is not whole and free (${pool.length}/${r.brokers.length} brokers)`, { details: { region: ctx.region } });
      const victims = wholeCell ? pool : [pick(ctx, pool, 'broker')];
      for (const v of victims) ledger.claimed.add(v.name);
      const event: PowerLossEvent = { region: ctx.region, brokers: victims.map((v) => v.name), wholeCell, atMs: Date.now(), healedAtMs: null };
      ledger.powerLosses.push(event);
      // All at once: a cell whose brokers die one by one would elect and replicate in between.
      await Promise.all(victims.map((v) => ctx.driver.hold(v, 'SIGKILL')));
      const seed = Math.floor(ctx.random() * 0xffff_ffff);
      const reports = await Promise.all(victims.map((v) => applyPowerLoss(r.brokers.find((b) => b.name === v.name)!.dataDir, { tear: true, seed })));
      const torn = reports.reduce((n, x) => n + x.torn.length, 0);
      const rewound = reports.reduce((n, x) => n + x.rewound.length, 0);
      ctx.mark('fault.power-loss', `${victims.map((v) => v.name).join(', ')}: ${rewound} files rewound to their last fdatasync, ${torn} torn`);
      return claiming(ledger, event.brokers, { name, region: ctx.region, detect: { leader: true }, affected: [ctx.region] }, async () => {
        event.healedAtMs = Date.now();
        await Promise.all(victims.map((v) => ctx.driver.release(v)));
      });
    },
  };
}

function corruption(ledger: RoundLedger, kind: 'truncate' | 'flip'): FaultSpec {
  const name = `corrupt-${kind}`;
  return {
    name,
    async inject(ctx) {
      const r = regionOf(ctx);
      const parts = await checkedPartitions(ctx);
      // A follower: a broker that is a replica, not the leader, of at least one checked partition.
      const followerOf = (b: DeploymentBroker) => parts.filter((p) => p.leader !== b.id && p.replicas.includes(b.id));
      const pool = (await free(ctx, ledger, r.brokers.map((b) => b.name))).filter((p) => followerOf(r.brokers.find((b) => b.name === p.name)!).length > 0);
      const victim = pick(ctx, pool, 'follower');
      const broker = r.brokers.find((b) => b.name === victim.name)!;
      ledger.claimed.add(victim.name);
      await ctx.driver.hold(victim, 'SIGKILL');
      const done: Corruption[] = [];
      // Every checked partition it follows: a minority (one replica of three) of each.
      for (const p of followerOf(broker)) {
        const dir = await partitionFolder(broker.dataDir, p.topic, p.partition);
        const seg = dir ? await lastSegment(dir) : null;
        if (!seg) continue;
        const c = kind === 'truncate' ? await truncateTail(seg.path, ctx.random) : await flipBits(seg.path, ctx.random);
        done.push(c);
        ledger.corruptions.push({ broker: broker.name, corruption: c });
      }
      ctx.mark(`fault.${name}`, `${broker.name}: ${done.map((c) => `${c.path.split('/').slice(-3).join('/')} ${c.kind === 'flip' ? `@${c.position} ^${c.mask}` : `${c.sizeBefore}→${c.sizeAfter}`}`).join('; ') || 'no segment with data yet'}`);
      return claiming(ledger, [victim.name], { name, region: ctx.region, detect: null, affected: [ctx.region] }, () => ctx.driver.release(victim));
    },
  };
}

/** The campaign's own faults for one round, sharing `ledger`. */
export function campaignFaults(ledger: RoundLedger): Record<CampaignFaultName, FaultSpec> {
  return {
    'pause-broker': pauseOf(ledger, 'broker'),
    'pause-gateway': pauseOf(ledger, 'gateway'),
    'kill-in-election': killInElection(ledger),
    'power-loss-broker': powerLoss(ledger, false),
    'power-loss-cell': powerLoss(ledger, true),
    'corrupt-truncate': corruption(ledger, 'truncate'),
    'corrupt-flip': corruption(ledger, 'flip'),
  };
}
