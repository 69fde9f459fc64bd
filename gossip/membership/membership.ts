/**
 * The member table and SWIM's rules for changing it, as memberlist applies them (state.go
 * aliveNode, suspectNode, deadNode, mergeState):
 *
 * - An incarnation number orders claims about a member; only the member raises its own. A newer
 *   incarnation's `alive` overrides anything; `suspect` and `dead` override `alive` at the same
 *   or a newer incarnation; older news is ignored.
 * - A suspect that hears of its suspicion (or of its death, while it has not left) refutes by
 *   raising its incarnation past the claim and gossiping `alive`. So does a member that hears a
 *   newer claim about itself than it holds: that is its previous life, which is how a restarted
 *   member learns its old incarnation and comes back above it.
 * - A suspicion's timer (suspicion.ts) makes it `dead` unless refuted first; other members'
 *   suspicions of the same member confirm it and shorten the timer (Lifeguard).
 * - `left` is a member's own goodbye: never refuted by others, never turned into `dead`.
 * - Push-pull state from another member is merged with `dead` taken as `suspect` (memberlist
 *   mergeState): another member's verdict is a reason to check, not a death sentence here.
 *   Unlike memberlist, the merged suspicion keeps its accuser (push-pull carries it) instead of
 *   being attributed to this member: memberlist's way makes every push-pull that carries a
 *   suspicion count as one more independent confirmation, so a single slow accuser's mistake
 *   reaches Lifeguard's shortest timeout as soon as anyone syncs (found in simulation: a healthy
 *   member killed in 10 minutes with a slow member and 5% loss).
 *
 * Dead and left members stay `deadRetainMs` (gossiped to, and pinged for reconnection, for a
 * while), then are reaped; the table holds at most `membersMax` members, this one included.
 */
import type { Clock } from '../../src/core/index.ts';
import type { AliveUpdate, DeadUpdate, LeftUpdate, MemberSnapshot, MemberState, SuspectUpdate, Update } from '../wire/messages.ts';
import type { Awareness } from './awareness.ts';
import { ProbeOrder } from './probe-order.ts';
import { Suspicion, suspicionTimeoutMs } from './suspicion.ts';

/** The largest incarnation (u32 on the wire). */
export const INCARNATION_MAX = 0xffffffff;

/** One member as this member knows it. */
export interface MemberRecord {
  id: string;
  region: string;
  address: string;
  tags: Record<string, string>;
  incarnation: number;
  state: MemberState;
  /** Monotonic ms of the last change of state. */
  stateChangedMs: number;
  /** Monotonic ms of the last authenticated message from it; null: never. */
  lastHeardMs: number | null;
  /** Suspect or dead: whose suspicion it was (the member that raised it), else null. */
  accuser: string | null;
}

/** Where a suspicion came from. */
export type SuspicionSource = 'probe' | 'gossip' | 'push-pull';

/** What the table tells its owner. */
export interface MembershipHooks {
  /** Queue `update` for dissemination under `name` (newer news about the same member replaces it). */
  broadcast(name: string, update: Update): void;
  /** A member was added or changed state, incarnation or address. */
  changed(record: MemberRecord, previous: { state: MemberState; incarnation: number } | null): void;
  /** This member started suspecting `record` (not a confirmation of a running suspicion). */
  suspected(record: MemberRecord, from: string, source: SuspicionSource): void;
  /** This member refuted a claim about itself. */
  refuted(incarnation: number): void;
  /** A member was declared dead; `local` when this member's own timer did it. */
  died(record: MemberRecord, local: boolean): void;
  /** A new member was refused because the table is full. */
  full(member: string): void;
}

/** What the rules depend on. */
export interface MembershipConfig {
  suspicionMult: number;
  suspicionMaxTimeoutMult: number;
  probeIntervalMs: number;
  lifeguard: boolean;
  deadRetainMs: number;
  membersMax: number;
}

/** Options of the table. */
export interface MembershipOptions {
  self: { id: string; region: string; address: string; tags: Record<string, string>; incarnation?: number };
  clock: Clock;
  random: () => number;
  config: MembershipConfig;
  awareness: Awareness;
  hooks: MembershipHooks;
}

function copy(r: MemberRecord): { state: MemberState; incarnation: number } {
  return { state: r.state, incarnation: r.incarnation };
}

/** The member table of one member. */
export class Membership {
  private readonly members = new Map<string, MemberRecord>();
  private readonly suspicions = new Map<string, Suspicion>();
  private readonly me: MemberRecord;
  private leaving = false;
  readonly order: ProbeOrder;

  constructor(private readonly options: MembershipOptions) {
    const s = options.self;
    this.me = { ...s, tags: { ...s.tags }, incarnation: s.incarnation ?? 0, state: 'alive', stateChangedMs: options.clock.monotonicMs(), lastHeardMs: null, accuser: null };
    this.order = new ProbeOrder(options.random);
  }

  private get now(): number {
    return this.options.clock.monotonicMs();
  }

  /** This member. */
  self(): MemberRecord {
    return this.me;
  }

  /** Another member, by id. */
  get(id: string): MemberRecord | undefined {
    return this.members.get(id);
  }

  /** Every other member, in no particular order. */
  others(): IterableIterator<MemberRecord> {
    return this.members.values();
  }

  /** Members known, this one included: memberlist's estimate of n for its timeouts and limits. */
  get knownCount(): number {
    return this.members.size + 1;
  }

  /** True once leave() was called. */
  get isLeaving(): boolean {
    return this.leaving;
  }

  /** This member's alive update, as gossiped. */
  selfAlive(): AliveUpdate {
    const m = this.me;
    return { kind: 'alive', member: m.id, region: m.region, incarnation: m.incarnation, address: m.address, tags: { ...m.tags } };
  }

  /** Gossips this member's alive (at start, and after a refutation). */
  announce(): void {
    this.options.hooks.broadcast(`m:${this.me.id}`, this.selfAlive());
  }

  /** Notes an authenticated message from `id`. */
  heard(id: string): void {
    const r = this.members.get(id);
    if (r) r.lastHeardMs = this.now;
  }

  /** Up to `k` distinct random members for which `eligible` holds. */
  randomMembers(k: number, eligible: (r: MemberRecord) => boolean): MemberRecord[] {
    if (k <= 0) return [];
    const candidates: MemberRecord[] = [];
    for (const r of this.members.values()) if (eligible(r)) candidates.push(r);
    // Partial Fisher-Yates: the first k places are a uniform sample.
    const n = Math.min(k, candidates.length);
    for (let i = 0; i < n; i++) {
      const j = i + Math.floor(this.options.random() * (candidates.length - i));
      [candidates[i], candidates[j]] = [candidates[j]!, candidates[i]!];
    }
    return candidates.slice(0, n);
  }

  /** Raises this member's incarnation past `claimed` and gossips alive (Lifeguard: a sign we are slow). */
  refute(claimed: number): void {
    const next = Math.min(INCARNATION_MAX, Math.max(this.me.incarnation, claimed) + 1);
    this.me.incarnation = next;
    if (this.options.config.lifeguard) this.options.awareness.apply(1);
    this.announce();
    this.options.hooks.refuted(next);
  }

  /**
   * Answers a suspect, dead or left claim about this member: refute it when it is at our
   * incarnation or above; when it is older, whoever holds it missed our last refutation, so
   * gossip our alive again (same incarnation; it replaces our queued alive, if any). Beyond
   * memberlist, which ignores an old claim: a member merging a stale table could otherwise hold
   * us suspect until its timer runs out (found in simulation: 5 s to converge after a heal).
   */
  private answerClaim(incarnation: number): void {
    if (this.leaving) return;
    if (incarnation >= this.me.incarnation) this.refute(incarnation);
    else this.announce();
  }

  /** Leaves: from now on claims about this member are not refuted. Returns the goodbye to gossip. */
  leave(): LeftUpdate {
    this.leaving = true;
    this.me.state = 'left';
    const u: LeftUpdate = { kind: 'left', member: this.me.id, incarnation: this.me.incarnation };
    this.options.hooks.broadcast(`m:${this.me.id}`, u);
    return u;
  }

  // --- the rules ------------------------------------------------------------------------------

  onAlive(a: AliveUpdate): void {
    if (a.member === this.me.id) {
      if (this.leaving) return;
      // A newer claim than ours is our previous life; the same incarnation from elsewhere is an impostor or a stale address: both are refuted.
      if (a.incarnation > this.me.incarnation || (a.incarnation === this.me.incarnation && (a.address !== this.me.address || a.region !== this.me.region))) this.refute(a.incarnation);
      return;
    }
    const r = this.members.get(a.member);
    if (!r) {
      if (this.members.size + 1 >= this.options.config.membersMax) this.reap();
      if (this.members.size + 1 >= this.options.config.membersMax) {
        this.options.hooks.full(a.member);
        return;
      }
      const rec: MemberRecord = { id: a.member, region: a.region, address: a.address, tags: { ...a.tags }, incarnation: a.incarnation, state: 'alive', stateChangedMs: this.now, lastHeardMs: null, accuser: null };
      this.members.set(rec.id, rec);
      this.order.add(rec.id);
      this.options.hooks.broadcast(`m:${rec.id}`, a);
      this.options.hooks.changed(rec, null);
      return;
    }
    if (a.incarnation <= r.incarnation) return;
    const previous = copy(r);
    this.suspicions.get(r.id)?.cancel();
    this.suspicions.delete(r.id);
    r.region = a.region;
    r.address = a.address;
    r.tags = { ...a.tags };
    r.incarnation = a.incarnation;
    r.accuser = null;
    if (r.state !== 'alive') {
      r.state = 'alive';
      r.stateChangedMs = this.now;
    }
    this.order.add(r.id);
    this.options.hooks.broadcast(`m:${r.id}`, a);
    this.options.hooks.changed(r, previous);
  }

  onSuspect(s: SuspectUpdate, source: SuspicionSource = 'gossip'): void {
    if (s.member === this.me.id) {
      this.answerClaim(s.incarnation);
      return;
    }
    const r = this.members.get(s.member);
    if (!r) return;
    if (s.incarnation < r.incarnation) return this.correct(r);
    if (r.state === 'dead' || r.state === 'left') return;
    if (r.state === 'suspect') {
      // A confirmation: re-gossip it only if it shortened our timer, so others shorten theirs.
      if (this.suspicions.get(r.id)?.confirm(s.from)) this.options.hooks.broadcast(`m:${r.id}`, s);
      return;
    }
    const previous = copy(r);
    r.state = 'suspect';
    r.incarnation = s.incarnation;
    r.stateChangedMs = this.now;
    r.accuser = s.from;
    this.startSuspicion(r, s.from);
    this.options.hooks.broadcast(`m:${r.id}`, s);
    this.options.hooks.changed(r, previous);
    this.options.hooks.suspected(r, s.from, source);
  }

  /**
   * Someone passed on a claim about `r` older than what this member holds: it holds stale news
   * (a member only passes on what it applied). Gossip what we hold when it is `alive`, so stale
   * holders catch up: a refutation is otherwise gossiped only by the refuter itself (others
   * drop an alive at an incarnation they already have), and a member that missed it holds the
   * old suspicion until its timer runs out (found in simulation: 13 s to one view after a heal,
   * 50 members).
   */
  private correct(r: MemberRecord): void {
    if (r.state !== 'alive') return;
    this.options.hooks.broadcast(`m:${r.id}`, { kind: 'alive', member: r.id, region: r.region, incarnation: r.incarnation, address: r.address, tags: { ...r.tags } });
  }

  /** A probe of `id` at `incarnation` failed: suspect it (from this member). */
  suspectLocally(id: string, incarnation: number): void {
    this.onSuspect({ kind: 'suspect', member: id, incarnation, from: this.me.id }, 'probe');
  }

  private startSuspicion(r: MemberRecord, from: string): void {
    const c = this.options.config;
    const n = this.knownCount;
    const minMs = suspicionTimeoutMs(c.suspicionMult, n, c.probeIntervalMs);
    let k = 0;
    let maxMs = minMs;
    if (c.lifeguard) {
      // memberlist suspectNode: expect suspicionMult − 2 confirmations, none if there are not
      // that many other members (n − 2: neither this member nor the suspect).
      k = c.suspicionMult - 2;
      if (n - 2 < k) k = 0;
      maxMs = c.suspicionMaxTimeoutMult * minMs;
    }
    const incarnation = r.incarnation;
    this.suspicions.get(r.id)?.cancel();
    this.suspicions.set(
      r.id,
      new Suspicion(this.options.clock, from, k, minMs, maxMs, () => {
        this.suspicions.delete(r.id);
        const cur = this.members.get(r.id);
        if (cur !== r || r.state !== 'suspect' || r.incarnation !== incarnation) return;
        this.onDead({ kind: 'dead', member: r.id, incarnation, from: this.me.id });
      }),
    );
  }

  onDead(d: DeadUpdate): void {
    if (d.member === this.me.id) {
      this.answerClaim(d.incarnation);
      return;
    }
    const r = this.members.get(d.member);
    if (!r) return;
    if (d.incarnation < r.incarnation) return this.correct(r);
    if (r.state === 'dead' || r.state === 'left') return;
    // The accuser of a death is whoever raised the suspicion behind it, when this member held one.
    const accuser = r.state === 'suspect' && r.accuser !== null ? r.accuser : d.from;
    this.markGone(r, 'dead', d.incarnation);
    r.accuser = accuser;
    this.options.hooks.broadcast(`m:${r.id}`, d);
    this.options.hooks.died(r, d.from === this.me.id);
  }

  onLeft(l: LeftUpdate): void {
    if (l.member === this.me.id) {
      // Our previous life's goodbye, replayed: we are here now.
      this.answerClaim(l.incarnation);
      return;
    }
    const r = this.members.get(l.member);
    // A member declared dead that said goodbye is `left`: the better news.
    if (!r || l.incarnation < r.incarnation || r.state === 'left') return;
    this.markGone(r, 'left', l.incarnation);
    r.accuser = null;
    this.options.hooks.broadcast(`m:${r.id}`, l);
  }

  private markGone(r: MemberRecord, state: 'dead' | 'left', incarnation: number): void {
    const previous = copy(r);
    this.suspicions.get(r.id)?.cancel();
    this.suspicions.delete(r.id);
    r.state = state;
    r.incarnation = incarnation;
    r.stateChangedMs = this.now;
    this.options.hooks.changed(r, previous);
  }

  /** Merges another member's full table (push-pull): dead is taken as suspect. */
  merge(remote: readonly MemberSnapshot[]): void {
    for (const m of remote) {
      switch (m.state) {
        case 'alive':
          this.onAlive({ kind: 'alive', member: m.member, region: m.region, incarnation: m.incarnation, address: m.address, tags: m.tags });
          break;
        case 'left':
          // An unknown member that left is not worth learning.
          if (this.members.has(m.member) || m.member === this.me.id) this.onLeft({ kind: 'left', member: m.member, incarnation: m.incarnation });
          break;
        case 'suspect':
        case 'dead':
          this.onSuspect({ kind: 'suspect', member: m.member, incarnation: m.incarnation, from: m.accuser ?? this.me.id }, 'push-pull');
          break;
      }
    }
  }

  /** Every member this one knows, itself first, for a push-pull. */
  snapshot(): MemberSnapshot[] {
    const out: MemberSnapshot[] = [{ member: this.me.id, region: this.me.region, incarnation: this.me.incarnation, address: this.me.address, tags: { ...this.me.tags }, state: this.me.state }];
    for (const r of this.members.values()) {
      const m: MemberSnapshot = { member: r.id, region: r.region, incarnation: r.incarnation, address: r.address, tags: r.tags, state: r.state };
      if (r.state === 'suspect' || r.state === 'dead') m.accuser = r.accuser ?? this.me.id;
      out.push(m);
    }
    return out;
  }

  /** Forgets dead and left members past `deadRetainMs`; returns how many. */
  reap(): number {
    let reaped = 0;
    const now = this.now;
    for (const r of [...this.members.values()]) {
      if ((r.state === 'dead' || r.state === 'left') && now - r.stateChangedMs >= this.options.config.deadRetainMs) {
        this.members.delete(r.id);
        this.order.remove(r.id);
        reaped++;
      }
    }
    return reaped;
  }

  /** Stops every suspicion timer (the agent is stopping). */
  stop(): void {
    for (const s of this.suspicions.values()) s.cancel();
    this.suspicions.clear();
  }

  /** The running suspicion of `id`, for tests and metrics. */
  suspicionOf(id: string): Suspicion | undefined {
    return this.suspicions.get(id);
  }
}
