/**
 * A whole mesh in one process: N real MeshAgents on a SimNetwork and a SimClock, deterministic
 * from one seed, with the faults the tests and the benchmark inject (crash, restart, partition,
 * loss, slow members) and the checkers they measure with: who suspected or killed a member that
 * was alive (false suspicions, false deaths), when every member knew of a crash, and whether
 * every member has one view.
 */
import { seededRandom } from '../../src/core/index.ts';
import type { MeshConfig, MeshLimits } from '../agent/config.ts';
import { MeshAgent } from '../agent/mesh-agent.ts';
import { SimClock } from './sim-clock.ts';
import { SimNetwork, type HandlingDelay } from './sim-network.ts';

/** The key of simulated meshes (32 bytes). */
export const SIM_KEY = 'sim-mesh-key-0123456789abcdefghij';
/** Simulated time between checks of a condition. */
export const SIM_STEP_MS = 50;

/** Options of a simulated mesh. */
export interface SimClusterOptions {
  members: number;
  seed: number;
  /** Loss on every link, 0 … 1. */
  lossRate?: number;
  /** One-way delay of every link (25 ms: a 50 ms RTT between regions). */
  delayMs?: number;
  jitterMs?: number;
  regions?: number;
  config?: Partial<MeshConfig>;
  limits?: Partial<MeshLimits>;
}

/** A suspicion or death of a member that had not crashed. */
export interface FalseEvent {
  atMs: number;
  by: string;
  target: string;
  /** The target was made slow at the time. */
  targetSlow: boolean;
  /** The accuser was slow at the time. */
  bySlow: boolean;
}

/** N agents on a simulated network. */
export class SimCluster {
  readonly clock = new SimClock();
  readonly network: SimNetwork;
  readonly agents: (MeshAgent | null)[] = [];
  readonly ids: string[] = [];
  readonly addresses: string[] = [];
  readonly falseSuspicions: FalseEvent[] = [];
  readonly falseDeaths: FalseEvent[] = [];
  /** Suspicions raised by probes of members that had crashed (true positives). */
  trueSuspicions = 0;
  private readonly crashed = new Set<number>();
  private readonly slowMembers = new Set<string>();
  private readonly seedRandom: () => number;
  private readonly startMs: number;

  private constructor(readonly options: SimClusterOptions) {
    this.network = new SimNetwork({
      clock: this.clock,
      seed: options.seed,
      defaults: { lossRate: options.lossRate ?? 0, delayMs: options.delayMs ?? 25, jitterMs: options.jitterMs ?? 0 },
    });
    this.seedRandom = seededRandom(options.seed ^ 0x5bd1e995);
    this.startMs = this.clock.monotonicMs();
    for (let i = 0; i < options.members; i++) {
      this.ids.push(`m${i}`);
      this.addresses.push(`10.${(i >> 8) & 255}.${i & 255}.1:7946`);
    }
  }

  /** Starts every member (each joining through member 0) and runs until all see each other, at most `settleMsMax`. */
  static async create(options: SimClusterOptions, settleMsMax = 120_000): Promise<SimCluster> {
    const c = new SimCluster(options);
    for (let i = 0; i < options.members; i++) await c.startMember(i);
    const settled = c.runUntil(() => c.converged(), settleMsMax);
    if (settled === null) throw new Error(`the simulated mesh of ${options.members} did not converge within ${settleMsMax} ms (seed ${options.seed})`);
    return c;
  }

  private agentOptions(i: number, seeds?: string[]) {
    const regions = this.options.regions ?? 3;
    return {
      clusterName: 'sim',
      member: this.ids[i]!,
      region: `region-${i % regions}`,
      keys: [SIM_KEY],
      advertise: this.addresses[i]!,
      seeds: seeds ?? (i === 0 ? [] : [this.addresses[0]!]),
      clock: this.clock,
      transport: this.network.endpoint(this.addresses[i]!),
      randomSeed: Math.floor(this.seedRandom() * 2 ** 31),
      config: this.options.config ?? {},
      limits: this.options.limits ?? {},
    };
  }

  private async startMember(i: number, seeds?: string[]): Promise<MeshAgent> {
    const agent = new MeshAgent(this.agentOptions(i, seeds));
    this.agents[i] = agent;
    const by = this.ids[i]!;
    agent.observe({
      suspicion: (e) => {
        if (e.source !== 'probe') return;
        const t = this.ids.indexOf(e.member);
        if (this.crashed.has(t)) this.trueSuspicions++;
        else this.falseSuspicions.push(this.event(by, e.member));
      },
      death: (e) => {
        if (!e.local) return;
        const t = this.ids.indexOf(e.member);
        if (!this.crashed.has(t)) this.falseDeaths.push(this.event(by, e.member));
      },
    });
    await agent.start();
    return agent;
  }

  private event(by: string, target: string): FalseEvent {
    const addr = (id: string) => this.addresses[this.ids.indexOf(id)]!;
    return { atMs: this.elapsedMs, by, target, targetSlow: this.slowMembers.has(addr(target)), bySlow: this.slowMembers.has(addr(by)) };
  }

  /** Simulated ms since the cluster was created. */
  get elapsedMs(): number {
    return this.clock.monotonicMs() - this.startMs;
  }

  /** Indices of members running now. */
  live(): number[] {
    return this.agents.flatMap((a, i) => (a !== null && !this.crashed.has(i) ? [i] : []));
  }

  /** Moves simulated time by `ms`. */
  run(ms: number): void {
    this.clock.advance(ms);
  }

  /** Runs until `cond` holds (checked every SIM_STEP_MS); the ms it took, or null after `msMax`. */
  runUntil(cond: () => boolean, msMax: number, stepMs = SIM_STEP_MS): number | null {
    const start = this.clock.monotonicMs();
    // A bounded loop: msMax / stepMs checks at most.
    for (let waited = 0; waited <= msMax; waited += stepMs) {
      if (cond()) return this.clock.monotonicMs() - start;
      this.clock.advance(stepMs);
    }
    return cond() ? this.clock.monotonicMs() - start : null;
  }

  /** Stops member `i` without a goodbye, and drops whatever was in flight to it. */
  crash(i: number): void {
    const a = this.agents[i];
    if (!a) return;
    this.crashed.add(i);
    void a.stop();
    this.agents[i] = null;
  }

  /** Starts member `i` again: a new process (incarnation 0) joining through another live member. */
  async restart(i: number): Promise<MeshAgent> {
    this.crashed.delete(i);
    const seedIndex = this.live().find((j) => j !== i) ?? 0;
    return this.startMember(i, [this.addresses[seedIndex]!]);
  }

  /** Makes member `i` slow to handle what it receives (null: healthy again). */
  slow(i: number, delay: HandlingDelay | null): void {
    const addr = this.addresses[i]!;
    this.network.setHandlingDelay(addr, delay);
    if (delay) this.slowMembers.add(addr);
    else this.slowMembers.delete(addr);
  }

  /** Cuts the members of `a` from those of `b`, both ways. */
  partition(a: readonly number[], b: readonly number[]): void {
    this.network.partition(
      a.map((i) => this.addresses[i]!),
      b.map((i) => this.addresses[i]!),
    );
  }

  heal(): void {
    this.network.heal();
  }

  /** True when every live member sees `i` as dead or left. */
  allKnowGone(i: number): boolean {
    const id = this.ids[i]!;
    return this.live().every((j) => {
      const m = this.agents[j]!.memberStatus(id);
      return m === undefined || m.state === 'dead' || m.state === 'left';
    });
  }

  /**
   * One view: every live member sees every other live member alive at the incarnation that member
   * holds itself, and no crashed member as alive.
   */
  converged(): boolean {
    const live = this.live();
    const incarnations = new Map(live.map((i) => [this.ids[i]!, this.agents[i]!.self().incarnation]));
    for (const i of live) {
      const a = this.agents[i]!;
      for (const j of live) {
        if (i === j) continue;
        const m = a.memberStatus(this.ids[j]!);
        if (!m || m.state !== 'alive' || m.incarnation !== incarnations.get(this.ids[j]!)) return false;
      }
      for (const j of this.crashed) {
        const m = a.memberStatus(this.ids[j]!);
        if (m && (m.state === 'alive' || m.state === 'suspect')) return false;
      }
    }
    return true;
  }

  /** The sum of a counter over live members. */
  sum(read: (a: MeshAgent) => number): number {
    return this.live().reduce((s, i) => s + read(this.agents[i]!), 0);
  }

  /** Stops everything. */
  async stop(): Promise<void> {
    for (const a of this.agents) await a?.stop();
  }
}
