/**
 * The catalogue of global topics: which topics every region's cell must have, carried in the
 * mesh state under `topic/<name>` (definition: partitions, replication factor, config) with
 * tombstones for deletions, so every region converges to the same set.
 *
 * - **Create** (`create`): the definition is checked against the local cell first (nothing is
 *   written on bad input), written to the mesh, and given `settleMs` for a concurrent create of
 *   the same name elsewhere to arrive. Of concurrent creates, the mesh's last-writer-wins rule
 *   (version, then member) picks one in every region alike; the others answer
 *   TOPIC_ALREADY_EXISTS naming the winner, and their regions take the winner's definition.
 * - **Delete** (`delete`): a tombstone; every region deletes its copy.
 * - **Reconcile** (on every change and every `reconcileIntervalMs`): a region creates a global
 *   topic it lacks, once its definition is older than the settle time (a younger one may still lose
 *   to a concurrent create that has not arrived); deletes its copy of a topic whose tombstone is newer than the copy; publishes
 *   a global topic created through its cell directly (the CLI or admin API talk to brokers, which
 *   run no mesh agent). A copy that differs from the winning definition is re-created only when
 *   it holds no records; one that holds records is kept and reported as a conflict: no
 *   acknowledged record is ever dropped to make definitions agree. A local topic with a global
 *   topic's name is a conflict too.
 */
import { EdgeqError, isEdgeqError, silentLogger, systemClock, toEdgeqError, type Clock, type Logger, type TimerHandle } from '../../src/core/index.ts';
import { MeshKeys, type MeshStateAccess, type MeshStateEntry } from './mesh-state.ts';

/** How long a create waits for a concurrent create elsewhere before it settles. */
export const CATALOGUE_SETTLE_MS = 1_500;
/** Period of the full reconcile (changes also trigger one). */
export const CATALOGUE_RECONCILE_INTERVAL_MS = 5_000;
/** Conflicts remembered for /v1/mesh (the newest kept). */
export const CATALOGUE_CONFLICTS_MAX = 100;

/** A global topic's definition. */
export interface GlobalTopicDef {
  name: string;
  partitions: number;
  /** Absent: each region's default (min(3, brokers)). */
  replicationFactor?: number;
  config: Record<string, string>;
}

/** The definition as the catalogue holds it. */
export interface CatalogueEntry extends GlobalTopicDef {
  /** The region whose create won. */
  region: string;
  createdAtMs: number;
}

/** A global topic in the catalogue, with its mesh version. */
export interface GlobalTopic extends CatalogueEntry {
  version: number;
  member: string;
}

/** A topic as the local cell has it. */
export interface LocalTopic {
  name: string;
  partitions: number;
  /** Its effective configuration. */
  config: Record<string, string>;
  scope: 'local' | 'global';
  createdAtMs: number;
}

/** The region's cell, as the catalogue needs it. */
export interface RegionCell {
  /** Checks a definition without creating anything (the cell's validate-only create). */
  validate(def: GlobalTopicDef): Promise<void>;
  /** The user topics of the cell. */
  topics(): Promise<LocalTopic[]>;
  /** Creates the topic with `scope=global`; TOPIC_ALREADY_EXISTS when it exists. */
  create(def: GlobalTopicDef): Promise<void>;
  delete(name: string): Promise<void>;
  /** True when the topic holds no record on any partition (asked only when definitions differ). */
  isEmpty(name: string): Promise<boolean>;
}

/** A definition that could not be applied in this region. */
export interface CatalogueConflict {
  topic: string;
  reason: string;
  atMs: number;
}

/** The catalogue as one region's gateway runs it. */
export class GlobalCatalogue {
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly settleMs: number;
  private readonly reconcileIntervalMs: number;
  private readonly conflictsByTopic = new Map<string, CatalogueConflict>();
  private reconciling: Promise<void> | null = null;
  private again = false;
  private timer: TimerHandle | null = null;
  private off: (() => void) | null = null;
  private stopped = false;

  constructor(
    private readonly mesh: MeshStateAccess,
    private readonly cell: RegionCell,
    options: { clock?: Clock; logger?: Logger; settleMs?: number; reconcileIntervalMs?: number } = {},
  ) {
    this.clock = options.clock ?? systemClock;
    this.logger = (options.logger ?? silentLogger).child({ component: 'catalogue' });
    this.settleMs = options.settleMs ?? CATALOGUE_SETTLE_MS;
    this.reconcileIntervalMs = options.reconcileIntervalMs ?? CATALOGUE_RECONCILE_INTERVAL_MS;
  }

  /** Follows the mesh: reconciles on every catalogue change and periodically. */
  start(): void {
    this.off = this.mesh.onStateChange((e) => {
      if (MeshKeys.isTopic(e.key)) this.reconcileSoon();
    });
    const tick = () => {
      this.reconcileSoon();
      if (!this.stopped) this.timer = this.clock.setTimeout(tick, this.reconcileIntervalMs);
    };
    tick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.timer?.cancel();
    this.off?.();
    await this.reconciling?.catch(() => undefined);
  }

  /** Live global topics, by name. */
  list(): GlobalTopic[] {
    return this.entries()
      .filter((e) => !e.deleted)
      .map((e) => ({ ...(e.value as CatalogueEntry), version: e.version, member: e.member }))
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  /** The live entry of `name`, if any. */
  get(name: string): GlobalTopic | undefined {
    return this.list().find((t) => t.name === name);
  }

  /** Definitions this region could not apply. */
  conflicts(): CatalogueConflict[] {
    return [...this.conflictsByTopic.values()];
  }

  /**
   * Creates a global topic in every region. Resolves once this region's cell has it; rejects
   * with TOPIC_ALREADY_EXISTS when the name is taken (here, in the catalogue, or by a concurrent
   * create that won), and with the cell's error on a bad definition (nothing written then).
   */
  async create(def: GlobalTopicDef): Promise<GlobalTopic> {
    await this.cell.validate(def);
    if (this.get(def.name)) throw exists(def.name, 'it is already a global topic');
    if ((await this.cell.topics()).some((t) => t.name === def.name)) throw exists(def.name, 'this region has a topic of that name');
    const me = this.mesh.self();
    const entry: CatalogueEntry = { ...def, config: { ...def.config }, region: me.region, createdAtMs: this.clock.nowMs() };
    this.mesh.setState(MeshKeys.topic(def.name), entry);
    // A concurrent create of the same name in another region arrives within the settle time;
    // the mesh's rule then picks the same winner everywhere.
    await new Promise<void>((resolve) => this.clock.setTimeout(resolve, this.settleMs));
    const winner = this.get(def.name);
    if (!winner) throw new EdgeqError('TOPIC_ALREADY_EXISTS', `global topic ${def.name} was deleted while it was being created`, { details: { topic: def.name } });
    if (winner.member !== me.member && !sameDefinition(winner, def)) {
      throw exists(def.name, `region ${winner.region} created it at the same time, with ${describe(winner)}; that definition won everywhere`);
    }
    await this.apply(winner, await this.cell.topics());
    return winner;
  }

  /** Deletes a global topic in every region; UNKNOWN_TOPIC_OR_PARTITION when it is not one. */
  async delete(name: string): Promise<void> {
    if (!this.get(name)) throw new EdgeqError('UNKNOWN_TOPIC_OR_PARTITION', `${name} is not a global topic`, { details: { topic: name } });
    this.mesh.deleteState(MeshKeys.topic(name));
    await this.cell.delete(name).catch((err: unknown) => {
      if (!isEdgeqError(err, 'UNKNOWN_TOPIC_OR_PARTITION')) throw err;
    });
  }

  /** Runs a reconcile now (coalesced with one already running). */
  reconcileSoon(): Promise<void> {
    if (this.reconciling) {
      this.again = true;
      return this.reconciling;
    }
    this.reconciling = (async () => {
      do {
        this.again = false;
        try {
          await this.reconcile();
        } catch (err) {
          this.logger.warn({ code: toEdgeqError(err).code, err: toEdgeqError(err).message }, 'catalogue reconcile failed; trying again');
        }
      } while (this.again && !this.stopped);
    })().finally(() => (this.reconciling = null));
    return this.reconciling;
  }

  private entries(): MeshStateEntry[] {
    return this.mesh.state().filter((e) => MeshKeys.isTopic(e.key));
  }

  private async reconcile(): Promise<void> {
    const local = await this.cell.topics();
    const byName = new Map(local.map((t) => [t.name, t]));
    const entries = new Map(this.entries().map((e) => [MeshKeys.topicName(e.key), e]));
    for (const [name, e] of entries) {
      if (this.stopped) return;
      const copy = byName.get(name);
      if (e.deleted) {
        // Deleted everywhere: this region's copy goes, unless it was created after the delete.
        if (copy?.scope === 'global' && copy.createdAtMs <= e.updatedAtMs) {
          this.logger.info({ topic: name }, 'global topic deleted elsewhere: deleting it here');
          await this.cell.delete(name).catch((err: unknown) => {
            if (!isEdgeqError(err, 'UNKNOWN_TOPIC_OR_PARTITION')) throw err;
          });
        }
        continue;
      }
      // A definition younger than the settle time may still lose to a concurrent create that has
      // not arrived: every region waits it out, as the creating one does, before applying it.
      const ageMs = this.clock.nowMs() - e.updatedAtMs;
      if (ageMs < this.settleMs) {
        this.clock.setTimeout(() => void this.reconcileSoon(), this.settleMs - ageMs + 1);
        continue;
      }
      await this.apply({ ...(e.value as CatalogueEntry), version: e.version, member: e.member }, local);
    }
    // Global topics made through this cell directly (CLI, admin API): the catalogue takes them.
    for (const t of local) {
      if (t.scope !== 'global') continue;
      const e = entries.get(t.name);
      if (e && !(e.deleted && t.createdAtMs > e.updatedAtMs)) continue;
      this.logger.info({ topic: t.name }, 'global topic created through the cell: publishing it to every region');
      this.mesh.setState(MeshKeys.topic(t.name), { name: t.name, partitions: t.partitions, config: {}, region: this.mesh.self().region, createdAtMs: t.createdAtMs } satisfies CatalogueEntry);
    }
  }

  /** Brings this region's copy of `t` in line with its definition, or records why not. */
  private async apply(t: GlobalTopic, local: LocalTopic[]): Promise<void> {
    const copy = local.find((x) => x.name === t.name);
    const def: GlobalTopicDef = { name: t.name, partitions: t.partitions, config: t.config, ...(t.replicationFactor !== undefined ? { replicationFactor: t.replicationFactor } : {}) };
    if (!copy) {
      await this.cell.create(def).catch((err: unknown) => {
        if (!isEdgeqError(err, 'TOPIC_ALREADY_EXISTS')) throw err;
      });
      this.conflictsByTopic.delete(t.name);
      return;
    }
    if (copy.scope !== 'global') return this.conflict(t.name, 'a local topic of this region has the name of a global topic');
    const differs = [
      ...(copy.partitions !== t.partitions ? [`${copy.partitions} partitions where the global definition has ${t.partitions}`] : []),
      ...Object.entries(t.config)
        .filter(([k, v]) => copy.config[k] !== v)
        .map(([k, v]) => `${k}=${copy.config[k] ?? '(unset)'} where the global definition has ${v}`),
    ];
    if (differs.length === 0) {
      this.conflictsByTopic.delete(t.name);
      return;
    }
    // Topics cannot change partitions or config in place: an empty copy is made again, a copy
    // that holds records is kept (its records are acknowledged) and the difference reported.
    if (!(await this.cell.isEmpty(t.name))) return this.conflict(t.name, `this region's copy holds records and has ${differs.join('; ')}`);
    this.logger.info({ topic: t.name, differs }, 'taking the winning definition of a global topic');
    await this.cell.delete(t.name);
    await this.cell.create(def);
    this.conflictsByTopic.delete(t.name);
  }

  private conflict(topic: string, reason: string): void {
    if (!this.conflictsByTopic.has(topic)) this.logger.warn({ topic, reason }, 'global topic conflict');
    this.conflictsByTopic.delete(topic);
    this.conflictsByTopic.set(topic, { topic, reason, atMs: this.clock.nowMs() });
    while (this.conflictsByTopic.size > CATALOGUE_CONFLICTS_MAX) this.conflictsByTopic.delete(this.conflictsByTopic.keys().next().value!);
  }
}

function exists(name: string, why: string): EdgeqError {
  return new EdgeqError('TOPIC_ALREADY_EXISTS', `topic ${name} already exists: ${why}`, { details: { topic: name } });
}

function sameDefinition(a: GlobalTopicDef, b: GlobalTopicDef): boolean {
  return a.partitions === b.partitions && a.replicationFactor === b.replicationFactor && JSON.stringify(sorted(a.config)) === JSON.stringify(sorted(b.config));
}

function sorted(c: Record<string, string>): [string, string][] {
  return Object.entries(c).sort(([x], [y]) => x.localeCompare(y));
}

function describe(t: GlobalTopicDef): string {
  return `${t.partitions} partitions${Object.keys(t.config).length ? `, config ${JSON.stringify(t.config)}` : ''}`;
}
