/**
 * Test support for the region features (not shipped API): a fake mesh whose members share
 * last-writer-wins state delivered after a delay on a fake clock (and can be cut off from each
 * other), and a fake cell that keeps topics in memory.
 */
import { EdgeqError, type FakeClock } from '../../src/core/index.ts';
import type { MeshStateAccess, MeshStateEntry } from './mesh-state.ts';
import type { GlobalTopicDef, LocalTopic, RegionCell } from './catalogue.ts';

/** True when `a` wins over `b` (last writer wins on version, then member). */
function wins(a: MeshStateEntry, b: MeshStateEntry | undefined): boolean {
  return !b || a.version > b.version || (a.version === b.version && a.member > b.member);
}

/** Members sharing state, each write reaching the others `delayMs` later (unless cut off). */
export class FakeMesh {
  private readonly members = new Map<string, FakeMember>();
  private readonly cut = new Set<string>();
  private readonly delays = new Map<string, number>();
  private hlc = 0;

  constructor(
    readonly clock: FakeClock,
    readonly delayMs = 200,
  ) {}

  member(region: string, member = `${region}-gw`): FakeMember {
    const m = new FakeMember(this, region, member);
    this.members.set(member, m);
    return m;
  }

  /** Cuts (or heals) the link between two members both ways. */
  partition(a: string, b: string, on = true): void {
    for (const k of [`${a}|${b}`, `${b}|${a}`]) {
      if (on) this.cut.add(k);
      else this.cut.delete(k);
    }
  }

  /** Sets the delay of writes from `from` to `to` (one direction). */
  setDelay(from: string, to: string, ms: number): void {
    this.delays.set(`${from}|${to}`, ms);
  }

  /** Sends every member's state to every other reachable one (a push-pull after a heal). */
  syncAll(): void {
    for (const from of this.members.values()) for (const e of from.state()) this.deliver(from.member, e, 0);
  }

  /** A version after every one handed out so far (a stand-in for the agent's hybrid clock). */
  nextVersion(): number {
    this.hlc = Math.max(this.hlc + 1, this.clock.nowMs() * 1000);
    return this.hlc;
  }

  deliver(from: string, e: MeshStateEntry, delayMs = this.delayMs): void {
    for (const to of this.members.values()) {
      if (to.member === from || this.cut.has(`${from}|${to.member}`)) continue;
      this.clock.setTimeout(() => to.receive(e), delayMs === this.delayMs ? (this.delays.get(`${from}|${to.member}`) ?? delayMs) : delayMs);
    }
  }
}

/** One member of a FakeMesh. */
export class FakeMember implements MeshStateAccess {
  private readonly entries = new Map<string, MeshStateEntry>();
  private readonly listeners = new Set<(e: MeshStateEntry) => void>();

  constructor(
    private readonly mesh: FakeMesh,
    readonly region: string,
    readonly member: string,
  ) {}

  self(): { region: string; member: string } {
    return { region: this.region, member: this.member };
  }

  setState(key: string, value: unknown): void {
    this.write({ key, value: JSON.parse(JSON.stringify(value)) as unknown, version: this.mesh.nextVersion(), member: this.member, updatedAtMs: this.mesh.clock.nowMs(), deleted: false });
  }

  deleteState(key: string): void {
    this.write({ key, value: undefined, version: this.mesh.nextVersion(), member: this.member, updatedAtMs: this.mesh.clock.nowMs(), deleted: true });
  }

  state(): MeshStateEntry[] {
    return [...this.entries.values()];
  }

  onStateChange(listener: (e: MeshStateEntry) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  receive(e: MeshStateEntry): void {
    if (!wins(e, this.entries.get(e.key))) return;
    this.entries.set(e.key, e);
    for (const l of this.listeners) l(e);
  }

  private write(e: MeshStateEntry): void {
    this.receive(e);
    this.mesh.deliver(this.member, e);
  }
}

/** A region's cell in memory: topics with a record count, as the catalogue sees them. */
export class FakeCell implements RegionCell {
  readonly topicsByName = new Map<string, LocalTopic & { records: number }>();

  async isEmpty(name: string): Promise<boolean> {
    return (this.topicsByName.get(name)?.records ?? 0) === 0;
  }
  /** Names that the cell refuses, as a cell refuses a bad definition. */
  readonly refuse = new Set<string>();
  /** Every create, in order (a topic made and dropped again shows here). */
  readonly created: { name: string; partitions: number }[] = [];

  constructor(private readonly clock: FakeClock) {}

  async validate(def: GlobalTopicDef): Promise<void> {
    if (this.refuse.has(def.name) || def.partitions < 1) throw new EdgeqError('INVALID_ARGUMENT', `bad topic ${def.name}`);
  }

  async topics(): Promise<LocalTopic[]> {
    return [...this.topicsByName.values()].map(({ records: _records, ...t }) => t);
  }

  async create(def: GlobalTopicDef, scope: 'local' | 'global' = 'global'): Promise<void> {
    await this.validate(def);
    if (this.topicsByName.has(def.name)) throw new EdgeqError('TOPIC_ALREADY_EXISTS', `topic ${def.name} already exists`);
    this.created.push({ name: def.name, partitions: def.partitions });
    this.topicsByName.set(def.name, { name: def.name, partitions: def.partitions, config: { ...def.config, scope }, scope, createdAtMs: this.clock.nowMs(), records: 0 });
  }

  async delete(name: string): Promise<void> {
    if (!this.topicsByName.delete(name)) throw new EdgeqError('UNKNOWN_TOPIC_OR_PARTITION', `topic ${name} does not exist`);
  }

  /** Writes `n` records into a topic (so a copy holds data). */
  write(name: string, n: number): void {
    this.topicsByName.get(name)!.records += n;
  }
}
