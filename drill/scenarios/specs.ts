/**
 * The seven drills of `edgeq drill <scenario>` as fault specs (issue 16). Each picks its victim
 * from the live deployment (seeded where there is a choice), injects through the fault driver,
 * and returns its heal, so the drill ends with the deployment whole.
 *
 * A killed process is SIGKILLed and kept down until the heal (the driver's hold), then started
 * again by the drill: left to the supervisor, a broker is back in about a second, often before
 * its cell's lease on it has run out, and then it simply resumes its leadership: the drill would
 * not rehearse a failover at all, and whether it did would depend on the machine's speed.
 */
import { EdgeqError } from '../../src/core/index.ts';
import type { DeploymentProcess } from '../faults/index.ts';
import type { CellPartitionView, FaultContext, FaultSpec, InjectedFault, ScenarioName } from '../runner/types.ts';

/** Bound on a killed process being running again (the supervisor's backoff, then a broker's log replay). */
export const RESTART_WAIT_MS = 60_000;
/** Pause between looks at the process list while waiting for a restart. */
const RESTART_POLL_MS = 200;
/** link-degrade: the latency becomes this many times the link's own, and at least LATENCY_ADD_MIN_MS more. */
export const DEGRADE_LATENCY_FACTOR = 10;
export const DEGRADE_LATENCY_ADD_MIN_MS = 10;
/** link-degrade: the loss rate put on the link. */
export const DEGRADE_LOSS_RATE = 0.05;

async function processNamed(ctx: FaultContext, name: string): Promise<DeploymentProcess> {
  const p = (await ctx.driver.processes()).find((x) => x.name === name);
  if (!p) throw new EdgeqError('NOT_FOUND', `the deployment runs no process named ${name}`, { details: { process: name } });
  return p;
}

/** Waits until `name` runs again (a pid is listed and it is not held). */
async function running(ctx: FaultContext, name: string): Promise<void> {
  const deadline = Date.now() + RESTART_WAIT_MS;
  for (;;) {
    const p = await processNamed(ctx, name);
    if (p.pid !== null && !p.held) return;
    if (Date.now() >= deadline) throw new EdgeqError('TIMEOUT', `${name} is not running again ${RESTART_WAIT_MS} ms after the drill killed it`, { details: { process: name } });
    await new Promise((r) => setTimeout(r, RESTART_POLL_MS));
  }
}

function regionOf(ctx: FaultContext) {
  const r = ctx.deployment.regions.find((x) => x.region === ctx.region);
  if (!r) throw new EdgeqError('INVALID_ARGUMENT', `unknown region "${ctx.region}"`, { details: { field: 'region' } });
  return r;
}

/** The checked partitions of the region's cell, busiest (highest high watermark) first. */
async function checkedPartitions(ctx: FaultContext): Promise<CellPartitionView[]> {
  const names = new Set(ctx.topics.map((t) => t.name));
  const cell = await ctx.cell(ctx.region);
  return cell.partitions.filter((p) => names.has(p.topic)).sort((a, b) => b.highWatermark - a.highWatermark || a.topic.localeCompare(b.topic) || a.partition - b.partition);
}

function brokerName(ctx: FaultContext, id: number): string {
  const b = regionOf(ctx).brokers.find((x) => x.id === id);
  if (!b) throw new EdgeqError('NOT_FOUND', `broker ${id} is not in ${ctx.region}'s deployment`, { details: { broker: id } });
  return b.name;
}

/** SIGKILLs `name` and keeps it down; the heal starts it again and waits until it runs. */
async function killAndAwaitRestart(ctx: FaultContext, name: string, base: Omit<InjectedFault, 'heal'>): Promise<InjectedFault> {
  await ctx.driver.hold(await processNamed(ctx, name), 'SIGKILL');
  ctx.mark('fault.kill', `${name} (SIGKILL; down until the heal)`);
  return {
    ...base,
    heal: async () => {
      await ctx.driver.release(await processNamed(ctx, name));
      await running(ctx, name);
    },
  };
}

const brokerKill: FaultSpec = {
  name: 'broker-kill',
  async inject(ctx) {
    const parts = await checkedPartitions(ctx);
    const leaders = new Set(parts.map((p) => p.leader).filter((x): x is number => x !== null));
    const brokers = regionOf(ctx).brokers;
    // A follower: a broker leading none of the checked partitions if there is one, else any but the busiest's leader.
    let pool = brokers.filter((b) => !leaders.has(b.id));
    if (pool.length === 0) pool = brokers.filter((b) => b.id !== parts[0]?.leader);
    if (pool.length === 0) throw new EdgeqError('INVALID_ARGUMENT', `${ctx.region} has no follower to kill`, { details: { field: 'region' } });
    const victim = pool[Math.floor(ctx.random() * pool.length)]!;
    return killAndAwaitRestart(ctx, victim.name, { name: 'broker-kill', region: ctx.region, detect: leaders.has(victim.id) ? { leader: true } : null, affected: [ctx.region] });
  },
};

const leaderKill: FaultSpec = {
  name: 'leader-kill',
  async inject(ctx) {
    const busiest = (await checkedPartitions(ctx)).find((p) => p.leader !== null);
    if (!busiest) throw new EdgeqError('BROKER_NOT_AVAILABLE', `no checked partition of ${ctx.region} has a leader to kill`);
    ctx.mark('fault.target', `${busiest.topic}-${busiest.partition} (hwm ${busiest.highWatermark}) led by broker ${busiest.leader} at epoch ${busiest.epoch}`);
    return killAndAwaitRestart(ctx, brokerName(ctx, busiest.leader!), { name: 'leader-kill', region: ctx.region, detect: { leader: true }, affected: [ctx.region] });
  },
};

const regionIsolate: FaultSpec = {
  name: 'region-isolate',
  async inject(ctx) {
    const others = ctx.deployment.regions.map((r) => r.region).filter((r) => r !== ctx.region);
    for (const other of others) await ctx.driver.blackhole(ctx.region, other, true);
    ctx.mark('fault.blackhole', `${ctx.region} ↔ ${others.join(', ')}`);
    return {
      name: 'region-isolate',
      region: ctx.region,
      detect: { memberOf: ctx.region },
      affected: ctx.deployment.regions.map((r) => r.region),
      heal: async () => {
        for (const other of others) await ctx.driver.blackhole(ctx.region, other, false);
      },
    };
  },
};

const regionKill: FaultSpec = {
  name: 'region-kill',
  async inject(ctx) {
    const r = regionOf(ctx);
    const names = [r.gatewayName, ...r.brokers.map((b) => b.name), r.arbiter.name];
    const procs = await Promise.all(names.map((n) => processNamed(ctx, n)));
    await Promise.all(procs.map((p) => ctx.driver.hold(p, 'SIGKILL')));
    ctx.mark('fault.kill', `every process of ${ctx.region}: ${names.join(', ')}`);
    return {
      name: 'region-kill',
      region: ctx.region,
      detect: { memberOf: ctx.region },
      affected: [ctx.region],
      // Back in dependency order: the arbiter, then the cell, then the gateway.
      heal: async () => {
        await ctx.driver.release(await processNamed(ctx, r.arbiter.name));
        await Promise.all(r.brokers.map(async (b) => ctx.driver.release(await processNamed(ctx, b.name))));
        await ctx.driver.release(await processNamed(ctx, r.gatewayName));
      },
    };
  },
};

const arbiterLoss: FaultSpec = {
  name: 'arbiter-loss',
  async inject(ctx) {
    const r = regionOf(ctx);
    const arbiter = await processNamed(ctx, r.arbiter.name);
    // The busiest partition's leader is read before the arbiter stops answering the gateway's view.
    const busiest = (await checkedPartitions(ctx)).find((p) => p.leader !== null);
    await ctx.driver.pause(arbiter);
    ctx.mark('fault.pause', r.arbiter.name);
    // Then a leadership change is needed while the arbiter is gone: the busiest partition's leader dies.
    let killed: string | null = null;
    if (busiest) {
      killed = brokerName(ctx, busiest.leader!);
      await ctx.driver.hold(await processNamed(ctx, killed), 'SIGKILL');
      ctx.mark('fault.kill', `${killed}, leader of ${busiest.topic}-${busiest.partition}: its writes need a new leader, which only the arbiter can fence`);
    }
    return {
      name: 'arbiter-loss',
      region: ctx.region,
      detect: { leader: true },
      affected: [ctx.region],
      heal: async () => {
        await ctx.driver.resume(await processNamed(ctx, r.arbiter.name));
        if (killed) {
          await ctx.driver.release(await processNamed(ctx, killed));
          await running(ctx, killed);
        }
      },
    };
  },
};

const linkDegrade: FaultSpec = {
  name: 'link-degrade',
  async inject(ctx) {
    const names = ctx.deployment.regions.map((r) => r.region);
    const others = names.filter((r) => r !== ctx.region);
    if (others.length === 0) throw new EdgeqError('INVALID_ARGUMENT', 'link-degrade needs a second region', { details: { field: 'region' } });
    // The next region in the deployment's order (by seed when there are several).
    const to = others.length === 1 ? others[0]! : others[Math.floor(ctx.random() * others.length)]!;
    const link = (await ctx.driver.links()).find((l) => l.from === ctx.region && l.to === to);
    if (!link) throw new EdgeqError('NOT_FOUND', `no link from ${ctx.region} to ${to}`);
    const latencyMs = Math.max(link.latencyMs * DEGRADE_LATENCY_FACTOR, link.latencyMs + DEGRADE_LATENCY_ADD_MIN_MS);
    await ctx.driver.degrade(ctx.region, to, { latencyMs, lossRate: DEGRADE_LOSS_RATE });
    ctx.mark('fault.degrade', `${ctx.region} → ${to}: latency ${link.latencyMs} → ${latencyMs} ms, loss ${link.lossRate} → ${DEGRADE_LOSS_RATE}`);
    return { name: 'link-degrade', region: ctx.region, detect: null, affected: [], heal: () => ctx.driver.degrade(ctx.region, to, null) };
  },
};

const gatewayKill: FaultSpec = {
  name: 'gateway-kill',
  async inject(ctx) {
    return killAndAwaitRestart(ctx, regionOf(ctx).gatewayName, { name: 'gateway-kill', region: ctx.region, detect: { memberOf: ctx.region }, affected: [ctx.region] });
  },
};

/** Every scenario's fault. */
export const SCENARIO_FAULTS: Readonly<Record<ScenarioName, FaultSpec>> = {
  'broker-kill': brokerKill,
  'leader-kill': leaderKill,
  'region-isolate': regionIsolate,
  'region-kill': regionKill,
  'arbiter-loss': arbiterLoss,
  'link-degrade': linkDegrade,
  'gateway-kill': gatewayKill,
};
