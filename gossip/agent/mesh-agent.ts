/**
 * The mesh agent: one member of the gossip mesh between regions (a gateway process runs one;
 * see gossip/README.md for why members are gateways). It composes the codec (wire/), the
 * transport (injected), the member table and SWIM + Lifeguard prober (membership/), the
 * piggyback queue and push-pull (dissemination/) and the versioned state (state/), and is the
 * only place that wires them to each other, to time and to the network.
 *
 * Every datagram is authenticated and parsed whole before any of it is applied (wire/codec.ts);
 * replies go to the advertised address a message names, through `translate`, never to the
 * address a datagram came from.
 */
import { randomInt } from 'node:crypto';
import { EdgeqError, seededRandom, silentLogger, systemClock, type Clock, type Logger, type TimerHandle } from '../../src/core/index.ts';
import { BroadcastQueue } from '../dissemination/broadcast-queue.ts';
import { PushPullRunner } from '../dissemination/push-pull.ts';
import { Awareness } from '../membership/awareness.ts';
import { Membership, type MemberRecord } from '../membership/membership.ts';
import { Prober } from '../membership/prober.ts';
import { HybridClock } from '../state/hlc.ts';
import { StateStore, type MeshStateEntry } from '../state/state-store.ts';
import { NodeTransport } from '../transport/node-transport.ts';
import type { MeshTransport } from '../transport/transport.ts';
import { MeshCodec } from '../wire/codec.ts';
import { Keyring, type MeshKey } from '../wire/keyring.ts';
import { encodeUpdate, type MemberState, type Primary, type PushPull, type StateUpdate, type Update } from '../wire/messages.ts';
import { isAddress } from '../wire/names.ts';
import { resolveConfig, resolveLimits, type MeshConfig, type MeshLimits } from './config.ts';
import { DatagramSender, makeDialer, type Dialer } from './datagrams.ts';
import { MeshEvents, type MemberChange, type MeshMember, type MeshSelf } from './events.ts';
import { checkOptions, type MeshAgentOptions } from './options.ts';
import { emptyStats, type DropReason, type MeshObserver, type MeshStats } from './stats.ts';

/** How often tombstones are purged and long-dead members forgotten. */
export const HOUSEKEEPING_INTERVAL_MS = 1_000;
/** The mesh's default port (memberlist's). */
export const MESH_PORT_DEFAULT = 7946;

export type { AddressTranslator, MeshAgentOptions } from './options.ts';
export type { MemberChange, MeshMember, MeshSelf } from './events.ts';

type Phase = 'new' | 'starting' | 'running' | 'leaving' | 'stopped';

function bad(key: string, message: string): EdgeqError {
  return new EdgeqError('INVALID_CONFIG', `mesh ${key}: ${message}`, { details: { key } });
}

/** One member of the mesh. */
export class MeshAgent {
  readonly config: MeshConfig;
  readonly limits: MeshLimits;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly log: Logger;
  private readonly transport: MeshTransport;
  private readonly codec: MeshCodec;
  private readonly queue: BroadcastQueue;
  private readonly awareness: Awareness;
  private readonly membership: Membership;
  private readonly prober: Prober;
  private readonly store: StateStore;
  private readonly pushPull: PushPullRunner;
  private readonly dial: Dialer;
  private readonly datagrams: DatagramSender;
  private readonly seeds: readonly string[];
  private readonly counters: MeshStats = emptyStats();
  private readonly events: MeshEvents;
  private phase: Phase = 'new';
  private timers: TimerHandle[] = [];
  private joinTimer: TimerHandle | null = null;
  private lastRevivalSyncMs = -Infinity;

  constructor(options: MeshAgentOptions) {
    const { tags, seeds } = checkOptions(options);
    this.seeds = seeds;
    this.config = resolveConfig(options.config);
    this.limits = resolveLimits(options.limits);
    const keyring = new Keyring(options.keys, { insecureDevKey: options.insecureDevKey === true });
    this.codec = new MeshCodec({
      clusterName: options.clusterName,
      keyring,
      datagramBytesMax: this.limits.datagramBytesMax,
      frameBytesMax: this.limits.frameBytesMax,
      ...(options.macOnly !== undefined ? { macOnly: options.macOnly } : {}),
      limits: { stateValueBytesMax: this.limits.stateValueBytesMax, membersMax: this.limits.membersMax, stateEntriesMax: this.limits.stateEntriesMax },
    });
    this.clock = options.clock ?? systemClock;
    this.random = seededRandom(options.randomSeed ?? randomInt(0, 2 ** 31));
    this.log = (options.logger ?? silentLogger).child({ component: 'mesh', member: options.member });
    this.events = new MeshEvents(this.log);
    if (options.tls !== undefined && options.transport !== undefined) throw bad('tls', 'TLS is for the default socket transport; an injected transport brings its own');
    this.transport = options.transport ?? new NodeTransport({ host: options.bindHost ?? '127.0.0.1', port: options.bindPort ?? MESH_PORT_DEFAULT, ...(options.tls ? { tls: options.tls } : {}) });
    this.queue = new BroadcastQueue({ retransmitMult: this.config.retransmitMult, queueMax: this.limits.broadcastQueueMax });
    this.awareness = new Awareness(this.config.lhmMax);
    this.dial = makeDialer(options.translate ?? ((advertised) => advertised), this.log);
    const sent = (bytes: number): void => {
      this.counters.messagesSent++;
      this.counters.bytesSent += bytes;
    };
    this.datagrams = new DatagramSender({ codec: this.codec, queue: this.queue, transport: this.transport, dial: this.dial, selfId: options.member, members: () => this.membership.knownCount, sent });
    const c = this.config;
    this.membership = new Membership({
      self: { id: options.member, region: options.region, address: options.advertise ?? '0.0.0.0:0', tags: { ...tags } },
      clock: this.clock,
      random: this.random,
      awareness: this.awareness,
      config: { suspicionMult: c.suspicionMult, suspicionMaxTimeoutMult: c.suspicionMaxTimeoutMult, probeIntervalMs: c.probeIntervalMs, lifeguard: c.lifeguard, deadRetainMs: c.deadRetainMs, membersMax: this.limits.membersMax },
      hooks: {
        broadcast: (name, update) => this.queue.enqueue(name, encodeUpdate(update)),
        changed: (r, prev) => {
          if (prev?.state === 'dead' && r.state === 'alive') this.syncAfterRevival(r);
          this.emitMember(r, prev?.state ?? null);
        },
        suspected: (r, from, source) => {
          if (source === 'probe') this.counters.suspicions++;
          else this.prober.tellSuspect(r);
          this.log.debug({ suspect: r.id, from, source }, 'suspect');
          this.notify((o) => o.suspicion?.({ member: r.id, incarnation: r.incarnation, from, source }));
        },
        refuted: (incarnation) => {
          this.counters.refutations++;
          this.log.debug({ incarnation }, 'refuted a suspicion of this member');
          this.notify((o) => o.refutation?.({ incarnation }));
        },
        died: (r, local) => {
          if (local) this.counters.deaths++;
          this.log.info({ dead: r.id, local }, 'member dead');
          this.notify((o) => o.death?.({ member: r.id, incarnation: r.incarnation, local }));
        },
        full: (member) => this.drop('members-full', `no room for ${member}`),
      },
    });
    this.prober = new Prober({
      membership: this.membership,
      awareness: this.awareness,
      clock: this.clock,
      random: this.random,
      config: { ...c, pendingAcksMax: this.limits.pendingAcksMax, membersMax: this.limits.membersMax },
      sender: { send: (to, primary, prefix) => this.send(to, primary, prefix) },
      hooks: {
        probed: () => void this.counters.probes++,
        failed: () => void this.counters.probesFailed++,
        rtt: (ms, member) => this.notify((o) => o.probeRtt?.(ms, member)),
        reconnected: (r) => this.pushPull.exchange(r.address, false, () => {}),
        acksFull: () => this.drop('acks-full', 'a ping-req not forwarded'),
        wrongTarget: (p) => this.drop('wrong-target', `a ping for ${p.target}`),
      },
    });
    this.store = new StateStore(this.limits, this.clock, new HybridClock(this.clock));
    this.pushPull = new PushPullRunner({
      codec: this.codec,
      transport: this.transport,
      clock: this.clock,
      random: this.random,
      pushPullIntervalMs: c.pushPullIntervalMs,
      tcpTimeoutMs: c.tcpTimeoutMs,
      pushPullsInFlightMax: this.limits.pushPullsInFlightMax,
      host: {
        selfId: () => options.member,
        local: (join, response) => ({ join, response, members: this.membership.snapshot(), entries: this.store.updates() }),
        merge: (remote, sender) => this.mergePushPull(remote, sender),
        members: () => this.membership.knownCount,
        randomPeer: () => this.membership.randomMembers(1, (r) => r.state === 'alive')[0]?.address ?? null,
        dial: (advertised) => this.dial(advertised, 'tcp'),
        exchanged: (ok, sent, received, err) => {
          this.counters.pushPulls++;
          if (!ok) this.counters.pushPullsFailed++;
          this.counters.bytesSent += sent;
          this.counters.bytesReceived += received;
          if (err) this.log.debug({ err: err.message }, 'push-pull failed');
        },
        dropped: (reason, detail) => this.drop(reason, detail),
      },
    });
  }

  // --- lifecycle ------------------------------------------------------------------------------

  /** Binds, announces itself and starts probing, gossiping and syncing; joins the seeds in the background. */
  async start(): Promise<void> {
    if (this.phase !== 'new') throw new EdgeqError('INVALID_ARGUMENT', `the mesh agent is ${this.phase}; start() runs once`);
    this.phase = 'starting';
    const bound = await this.transport.start(
      {
        onPacket: (bytes, from) => this.onPacket(bytes, from),
        onStream: (request, _from, reply) => {
          if (this.phase !== 'running' && this.phase !== 'leaving') return reply(null);
          this.pushPull.onStream(request, reply);
        },
        onRefused: (reason, from) => this.drop('tls-refused', `${from}: ${reason}`),
      },
      { frameBytesMax: this.limits.frameBytesMax },
    );
    const self = this.membership.self();
    if (self.address === '0.0.0.0:0') {
      const address = bound.host.includes(':') ? `[${bound.host}]:${bound.port}` : `${bound.host}:${bound.port}`;
      if (bound.host === '0.0.0.0' || bound.host === '::') {
        await this.transport.stop();
        this.phase = 'stopped';
        throw bad('advertise', `bound to ${bound.host}: give the address others reach this member at`);
      }
      self.address = address;
    }
    this.phase = 'running';
    this.membership.announce();
    this.prober.start();
    this.pushPull.start();
    this.every(this.config.gossipIntervalMs, () => this.gossipTick());
    this.every(HOUSEKEEPING_INTERVAL_MS, () => {
      this.store.expire();
      this.membership.reap();
    });
    if (this.seeds.length > 0) this.joinUntilContact(this.config.joinRetryMs);
    this.log.info({ address: self.address, seeds: this.seeds }, 'mesh agent started');
  }

  private every(ms: number, fn: () => void): void {
    const slot = this.timers.length;
    const run = (): void => {
      if (this.phase !== 'running' && this.phase !== 'leaving') return;
      this.timers[slot] = this.clock.setTimeout(run, ms);
      fn();
    };
    this.timers.push(this.clock.setTimeout(run, Math.floor(this.random() * ms)));
  }

  /** Joins the configured seeds, retrying with doubling waits while no seed answers and no member is known. */
  private joinUntilContact(waitMs: number): void {
    this.joinSeeds(this.seeds, (contacted) => {
      if (contacted > 0 || this.phase !== 'running') return;
      if ([...this.membership.others()].some((r) => r.state === 'alive')) return;
      this.joinTimer = this.clock.setTimeout(() => this.joinUntilContact(Math.min(waitMs * 2, this.config.joinRetryMsMax)), waitMs);
    });
  }

  private joinSeeds(seeds: readonly string[], done: (contacted: number) => void): void {
    const self = this.membership.self();
    const targets = seeds.filter((s) => s !== self.address);
    if (targets.length === 0) return done(0);
    let pending = targets.length;
    let contacted = 0;
    for (const seed of targets) {
      this.pushPull.exchange(seed, true, (ok) => {
        if (ok) contacted++;
        if (--pending === 0) done(contacted);
      });
    }
  }

  /** Exchanges full state with each seed (advertised addresses); resolves with how many answered. */
  join(seeds: readonly string[]): Promise<number> {
    if (this.phase !== 'running') return Promise.reject(new EdgeqError('INVALID_ARGUMENT', `join() needs a running agent (it is ${this.phase})`));
    for (const s of seeds) if (typeof s !== 'string' || !isAddress(s)) return Promise.reject(new EdgeqError('INVALID_ARGUMENT', `seed "${String(s)}" is not host:port`));
    return new Promise((resolve) => this.joinSeeds(seeds, resolve));
  }

  /**
   * Says goodbye: gossips `left` (to a few members at once, then for leaveWaitMs more), stops
   * probing, then stops. Others mark this member left, not dead.
   */
  async leave(): Promise<void> {
    if (this.phase !== 'running') return this.stop();
    this.phase = 'leaving';
    this.prober.stopProbing();
    this.pushPull.stop();
    this.membership.leave();
    for (const r of this.membership.randomMembers(this.config.gossipNodes, (r) => r.state === 'alive' || r.state === 'suspect')) this.send(r.address, { type: 'gossip' });
    await new Promise<void>((resolve) => this.clock.setTimeout(resolve, this.config.leaveWaitMs));
    await this.stop();
  }

  /** Stops at once (others will find this member dead). */
  async stop(): Promise<void> {
    if (this.phase === 'stopped') return;
    const wasStarted = this.phase !== 'new';
    this.phase = 'stopped';
    for (const t of this.timers) t.cancel();
    this.timers = [];
    this.joinTimer?.cancel();
    this.prober.stop();
    this.pushPull.stop();
    this.membership.stop();
    if (wasStarted) await this.transport.stop();
    this.log.info('mesh agent stopped');
  }

  // --- the network ----------------------------------------------------------------------------

  /** Sends `primary` to an advertised address while the agent runs (datagrams.ts). */
  private send(advertised: string, primary: Primary, prefix: readonly Buffer[] = []): void {
    if (this.phase === 'running' || this.phase === 'leaving') this.datagrams.send(advertised, primary, prefix);
  }

  private gossipTick(): void {
    if (this.queue.size === 0) return;
    const now = this.clock.monotonicMs();
    const deadMs = this.config.gossipToTheDeadMs;
    const targets = this.membership.randomMembers(this.config.gossipNodes, (r) => r.state === 'alive' || r.state === 'suspect' || (r.state === 'dead' && now - r.stateChangedMs < deadMs));
    for (const t of targets) {
      if (this.queue.size === 0) break;
      this.send(t.address, { type: 'gossip' });
    }
  }

  private onPacket(bytes: Buffer, _from: string): void {
    if (this.phase !== 'running' && this.phase !== 'leaving') return;
    this.counters.messagesReceived++;
    this.counters.bytesReceived += bytes.length;
    const decoded = this.codec.decodePacket(bytes);
    if (!decoded.ok) return this.drop(decoded.reason, decoded.detail);
    const { sender, primary, updates } = decoded.value;
    const self = this.membership.self();
    if (sender === self.id) return this.drop('from-self', 'a datagram from this member id');
    this.membership.heard(sender);
    // A member held dead is talking to us: a healed cut or a false death. Tell it now.
    const known = this.membership.get(sender);
    if (known?.state === 'dead') this.prober.reconnect(known);
    for (const u of updates) this.apply(u);
    switch (primary.type) {
      case 'ping':
        return this.prober.onPing(primary);
      case 'ack':
        return this.prober.onAck(primary.seq);
      case 'nack':
        return this.prober.onNack(primary.seq);
      case 'ping-req':
        return this.prober.onPingReq(primary);
      case 'gossip':
        return;
    }
  }

  private apply(u: Update): void {
    switch (u.kind) {
      case 'alive':
        return this.membership.onAlive(u);
      case 'suspect':
        return this.membership.onSuspect(u, 'gossip');
      case 'dead':
        return this.membership.onDead(u);
      case 'left':
        return this.membership.onLeft(u);
      case 'state':
        return this.mergeState(u);
    }
  }

  private mergeState(u: StateUpdate): void {
    const result = this.store.merge(u);
    switch (result) {
      case 'applied': {
        this.queue.enqueue(`k:${u.key}`, encodeUpdate(u));
        const entry = this.store.view(u.key) ?? { key: u.key, value: undefined, version: u.version, member: u.member, updatedAtMs: Math.floor(u.version / 1000), deleted: true };
        return this.emitState(entry);
      }
      case 'future':
        return this.drop('state-future', `${u.key} written ahead of this clock`);
      case 'full':
        return this.drop('state-full', `no room for ${u.key}`);
      case 'malformed':
        return this.drop('state-malformed', `${u.key} is not JSON`);
      case 'stale':
      case 'expired':
        return;
    }
  }

  private mergePushPull(remote: PushPull, sender: string): void {
    if (this.phase === 'stopped') return;
    this.membership.heard(sender);
    this.membership.merge(remote.members);
    for (const e of remote.entries) this.mergeState(e);
  }

  /**
   * A member held dead is alive again: a healed partition or a false death, so both sides wrote
   * state the other has not seen, and piggybacks spent during the cut will not repeat it. One
   * push-pull with it, at most one such per reconnect interval (after a heal every member of
   * one side revives the other side's members at once).
   */
  private syncAfterRevival(r: MemberRecord): void {
    const now = this.clock.monotonicMs();
    if (this.phase !== 'running' || now - this.lastRevivalSyncMs < this.config.reconnectIntervalMs) return;
    this.lastRevivalSyncMs = now;
    this.pushPull.exchange(r.address, false, () => {});
  }

  private drop(reason: DropReason, detail: string): void {
    this.counters.drops[reason]++;
    this.notify((o) => o.drop?.({ reason, detail }));
  }

  // --- events ---------------------------------------------------------------------------------

  private notify(fn: (o: MeshObserver) => void): void {
    this.events.notify(fn);
  }

  private emitMember(r: MemberRecord, previous: MemberState | null): void {
    if (this.events.wantsMembers) this.events.member({ member: this.view(r), previous });
  }

  private emitState(entry: MeshStateEntry): void {
    this.events.state(entry);
  }

  /** Calls `listener` on every change of a member; returns the unsubscribe. */
  onMemberChange(listener: (change: MemberChange) => void): () => void {
    return this.events.onMemberChange(listener);
  }

  /** Calls `listener` for every change of a state entry, local or learned; returns the unsubscribe. */
  onStateChange(listener: (entry: MeshStateEntry) => void): () => void {
    return this.events.onStateChange(listener);
  }

  /** Follows events (probe RTTs, suspicions, refutations, deaths, drops); returns the unsubscribe. */
  observe(observer: MeshObserver): () => void {
    return this.events.observe(observer);
  }

  // --- reading --------------------------------------------------------------------------------

  private view(r: MemberRecord): MeshMember {
    const self = r === this.membership.self();
    return {
      region: r.region,
      member: r.id,
      address: r.address,
      state: r.state,
      incarnation: r.incarnation,
      phi: self ? 0 : this.prober.phi(r.id),
      lastHeardMs: self ? 0 : r.lastHeardMs === null ? -1 : Math.max(0, Math.round(this.clock.monotonicMs() - r.lastHeardMs)),
      rttMs: self ? null : roundRtt(this.prober.rttMs(r.id)),
    };
  }

  /** This member. */
  self(): MeshSelf {
    const s = this.membership.self();
    return { region: s.region, member: s.id, incarnation: s.incarnation, address: s.address };
  }

  /** Every member known, this one first. */
  members(): MeshMember[] {
    return [this.view(this.membership.self()), ...[...this.membership.others()].map((r) => this.view(r))];
  }

  /** One member by id, as this member sees it. */
  member(id: string): MeshMember | undefined {
    const r = id === this.membership.self().id ? this.membership.self() : this.membership.get(id);
    return r ? this.view(r) : undefined;
  }

  /** A member's state and incarnation in this member's view, without the rest of its view (cheap: no phi). */
  memberStatus(id: string): { state: MemberState; incarnation: number } | undefined {
    const r = id === this.membership.self().id ? this.membership.self() : this.membership.get(id);
    return r ? { state: r.state, incarnation: r.incarnation } : undefined;
  }

  /** Counters since creation (a copy). */
  stats(): MeshStats {
    return { ...this.counters, drops: { ...this.counters.drops } };
  }

  /** Lifeguard's health score of this member (0: healthy, up to lhmMax − 1). */
  health(): number {
    return this.awareness.health;
  }

  /** Updates waiting to be piggybacked. */
  queuedUpdates(): number {
    return this.queue.size;
  }

  // --- state ----------------------------------------------------------------------------------

  private writable(): void {
    if (this.phase === 'leaving' || this.phase === 'stopped') throw new EdgeqError('CONNECTION_CLOSED', `the mesh agent is ${this.phase}: state is read-only`);
  }

  /** Writes `key` (bytes, or any JSON value) as a new version from this member, to be disseminated. */
  setState(key: string, value: unknown): MeshStateEntry {
    this.writable();
    const { update, entry } = this.store.set(key, value, this.membership.self().id);
    this.queue.enqueue(`k:${key}`, encodeUpdate(update));
    this.emitState(entry);
    return entry;
  }

  /** Deletes `key`: a tombstone, disseminated, purged after tombstoneRetainMs. */
  deleteState(key: string): MeshStateEntry {
    this.writable();
    const { update, entry } = this.store.delete(key, this.membership.self().id);
    this.queue.enqueue(`k:${key}`, encodeUpdate(update));
    this.emitState(entry);
    return entry;
  }

  /** Every entry, tombstones included. */
  state(): MeshStateEntry[] {
    return this.store.all();
  }

  /** One entry, or undefined. */
  stateOf(key: string): MeshStateEntry | undefined {
    return this.store.view(key);
  }
}

/** RTT to 0.1 ms: finer is noise, and views compare equal when nothing changed. */
function roundRtt(ms: number | null): number | null {
  return ms === null ? null : Math.round(ms * 10) / 10;
}
