/**
 * SWIM's failure detector as memberlist runs it (state.go probeNode), with Lifeguard:
 *
 * Every probe interval, ping the next member in round-robin order. No ack within the probe
 * timeout: ask `indirectChecks` other alive members to ping it for us (ping-req); they forward
 * its ack, or (Lifeguard) send a nack when they got none, which tells us they at least hear us.
 * No ack by the end of the probe interval (a late direct ack still counts): suspect it. With the
 * ping-reqs goes a second direct ping, where memberlist tries TCP.
 *
 * Lifeguard (Dadgar et al. 2018): the interval and timeout are stretched by the local health
 * multiplier (awareness.ts), which a failed probe raises by the nacks that did not come (or by
 * one if nobody was asked) and a successful one lowers by one; a ping to a suspect carries the
 * suspicion, so the suspect refutes in its ack (the buddy system).
 *
 * Acks feed each member's phi accrual detector (phi-accrual.ts), which reports, and direct acks
 * its smoothed round-trip time (the link latency the dashboard shows: TCP's SRTT, RFC 6298).
 *
 * Beyond memberlist: a suspicion learned from another member is told to the suspect at once
 * (tellSuspect), not at this member's next turn to probe it; and members held dead are pinged
 * for reconnection now and then with a `dead`
 * notice riding along. A member that is in fact alive (a healed partition, a false death)
 * refutes in its ack, and the ack asks the agent for a push-pull with it, so a healed
 * partition converges without waiting for anyone's piggybacks.
 */
import type { Clock, TimerHandle } from '../../src/core/index.ts';
import { encodeUpdate, type Ping, type PingReq, type Primary } from '../wire/messages.ts';
import { AckTracker } from './ack-tracker.ts';
import type { Awareness } from './awareness.ts';
import type { MemberRecord, Membership } from './membership.ts';
import { PhiAccrual } from './phi-accrual.ts';

/** How the prober sends: to an advertised address, updates of `prefix` first, then piggybacks. */
export interface ProbeSender {
  send(advertised: string, primary: Primary, prefix?: readonly Buffer[]): void;
}

/** What the prober reports. */
export interface ProberHooks {
  probed(target: MemberRecord): void;
  failed(target: MemberRecord): void;
  rtt(ms: number, member: string): void;
  /** A member held dead answered a reconnection ping. */
  reconnected(member: MemberRecord): void;
  /** A ping-req could not be forwarded: too many acks awaited. */
  acksFull(): void;
  /** A ping named another member. */
  wrongTarget(ping: Ping): void;
}

/** The settings the prober uses. */
export interface ProberConfig {
  probeIntervalMs: number;
  probeTimeoutMs: number;
  indirectChecks: number;
  lifeguard: boolean;
  reconnectIntervalMs: number;
  deadRetainMs: number;
  phiWindowMax: number;
  phiStdDevMsMin: number;
  pendingAcksMax: number;
  membersMax: number;
}

/** Options of the prober. */
export interface ProberOptions {
  membership: Membership;
  awareness: Awareness;
  clock: Clock;
  random: () => number;
  config: ProberConfig;
  sender: ProbeSender;
  hooks: ProberHooks;
}

/** Probes, answers probes and forwards ping-reqs for one member. */
export class Prober {
  private readonly acks: AckTracker;
  private readonly phis = new Map<string, PhiAccrual>();
  /** Smoothed RTT of direct acks per member, ms (bounded by membersMax like phis, pruned with it). */
  private readonly srtt = new Map<string, number>();
  /** When each member was last sent a suspicion or dead notice (bounded by membersMax, pruned). */
  private readonly lastNoticeMs = new Map<string, number>();
  private seq: number;
  private probeTimer: TimerHandle | null = null;
  private reconnectTimer: TimerHandle | null = null;
  private probing = false;

  constructor(private readonly o: ProberOptions) {
    this.acks = new AckTracker(o.clock, o.config.pendingAcksMax);
    this.seq = Math.floor(o.random() * 0xffffffff) >>> 0;
  }

  private get c(): ProberConfig {
    return this.o.config;
  }

  private get now(): number {
    return this.o.clock.monotonicMs();
  }

  /** Acks awaited now. */
  get pendingAcks(): number {
    return this.acks.size;
  }

  /** Starts probing, the first probe at a random point of the first interval (so members stay out of step). */
  start(): void {
    this.probing = true;
    this.probeTimer = this.o.clock.setTimeout(() => this.tick(), Math.floor(this.o.random() * this.c.probeIntervalMs));
    this.reconnectTimer = this.o.clock.setTimeout(() => this.reconnectTick(), Math.floor(this.o.random() * this.c.reconnectIntervalMs));
  }

  /** Stops probing this member's peers; it still answers pings until stop(). */
  stopProbing(): void {
    this.probing = false;
    this.probeTimer?.cancel();
    this.reconnectTimer?.cancel();
    this.probeTimer = null;
    this.reconnectTimer = null;
  }

  /** Stops everything and forgets every awaited ack. */
  stop(): void {
    this.stopProbing();
    this.acks.clear();
  }

  /** Smoothed round trip of direct pings to `id`, ms; null before its first direct ack. */
  rttMs(id: string): number | null {
    return this.srtt.get(id) ?? null;
  }

  /**
   * SRTT ← 7/8 SRTT + 1/8 sample (RFC 6298 §2): steady under one slow ack, follows a lasting change
   * within a dozen probes. Only direct acks count: one that came after the ping-reqs went may
   * have come the long way round, through another member.
   */
  private sampleRtt(id: string, ms: number): void {
    const s = this.srtt.get(id);
    this.srtt.set(id, s === undefined ? ms : s + (ms - s) / 8);
  }

  /** Phi of `id` now (0 before its first ack). */
  phi(id: string): number {
    return this.phis.get(id)?.phi(this.now) ?? 0;
  }

  private nextSeq(): number {
    this.seq = (this.seq + 1) >>> 0;
    return this.seq;
  }

  private scaled(ms: number): number {
    return this.c.lifeguard ? this.o.awareness.scale(ms) : ms;
  }

  private tick(): void {
    if (!this.probing) return;
    const intervalMs = this.scaled(this.c.probeIntervalMs);
    this.probeTimer = this.o.clock.setTimeout(() => this.tick(), intervalMs);
    const m = this.o.membership;
    const id = m.order.next((id) => {
      const r = m.get(id);
      return r !== undefined && (r.state === 'alive' || r.state === 'suspect');
    });
    const target = id === null ? undefined : m.get(id);
    if (target) this.probe(target, intervalMs);
  }

  private heartbeat(id: string): void {
    let p = this.phis.get(id);
    if (!p) {
      // Before two acks, assume one round: each member is probed once per n − 1 intervals.
      p = new PhiAccrual({ windowMax: this.c.phiWindowMax, stdDevMsMin: this.c.phiStdDevMsMin, firstIntervalMs: this.c.probeIntervalMs * Math.max(1, this.o.membership.knownCount - 1) });
      this.phis.set(id, p);
    }
    p.heartbeat(this.now);
  }

  private probe(target: MemberRecord, intervalMs: number): void {
    const self = this.o.membership.self();
    const seq = this.nextSeq();
    const startMs = this.now;
    const incarnation = target.incarnation;
    let acked = false;
    let nacks = 0;
    let expectedNacks = 0;
    let timeoutTimer: TimerHandle | null = null;
    let indirect = false;
    this.o.hooks.probed(target);
    const registered = this.acks.register(seq, intervalMs, {
      onAck: () => {
        acked = true;
        timeoutTimer?.cancel();
        if (this.c.lifeguard) this.o.awareness.apply(-1);
        this.heartbeat(target.id);
        if (!indirect) this.sampleRtt(target.id, this.now - startMs);
        this.o.hooks.rtt(this.now - startMs, target.id);
      },
      onNack: () => void nacks++,
      onTimeout: () => {
        if (acked || !this.probing) return;
        if (this.c.lifeguard) {
          // memberlist probeNode: with ping-req peers that owe nacks, each missing nack counts
          // against our own health (we may be the slow one); with none, the failure itself does.
          this.o.awareness.apply(expectedNacks > 0 ? expectedNacks - nacks : 1);
        }
        this.o.hooks.failed(target);
        this.o.membership.suspectLocally(target.id, incarnation);
      },
    });
    if (!registered) return;
    // The buddy system: a suspect learns of its suspicion from the ping itself.
    const prefix = this.c.lifeguard && target.state === 'suspect' ? [encodeUpdate({ kind: 'suspect', member: target.id, incarnation: target.incarnation, from: self.id })] : [];
    const ping: Ping = { type: 'ping', seq, target: target.id, sourceAddr: self.address };
    this.o.sender.send(target.address, ping, prefix);
    timeoutTimer = this.o.clock.setTimeout(() => {
      if (acked || !this.probing) return;
      indirect = true;
      // A second direct ping beside the ping-reqs: memberlist sends a TCP ping here (its
      // fallback); one more datagram does that job without a connection across a WAN proxy, and
      // with few members (one ping-req peer, as with 3) it is most of what stands between 5%
      // loss and a suspicion: 0.098 × 0.185 → 0.098 × 0.185 × 0.098 per probe.
      this.o.sender.send(target.address, ping, prefix);
      const peers = this.o.membership.randomMembers(this.c.indirectChecks, (r) => r.state === 'alive' && r.id !== target.id);
      expectedNacks = this.c.lifeguard ? peers.length : 0;
      for (const peer of peers) {
        this.o.sender.send(peer.address, { type: 'ping-req', seq, target: target.id, targetAddr: target.address, sourceAddr: self.address, nack: this.c.lifeguard });
      }
    }, this.scaled(this.c.probeTimeoutMs));
  }

  /** A ping for this member: ack it at the sender's advertised address. */
  onPing(p: Ping): void {
    if (p.target !== this.o.membership.self().id) {
      this.o.hooks.wrongTarget(p);
      return;
    }
    this.o.sender.send(p.sourceAddr, { type: 'ack', seq: p.seq });
  }

  onAck(seq: number): void {
    this.acks.ack(seq);
  }

  onNack(seq: number): void {
    this.acks.nack(seq);
  }

  /** Pings `req.target` for the requester and forwards its ack, or a nack when none comes in time. */
  onPingReq(req: PingReq): void {
    const self = this.o.membership.self();
    const seq = this.nextSeq();
    const ok = this.acks.register(seq, this.c.probeTimeoutMs, {
      onAck: () => this.o.sender.send(req.sourceAddr, { type: 'ack', seq: req.seq }),
      onTimeout: () => {
        if (req.nack) this.o.sender.send(req.sourceAddr, { type: 'nack', seq: req.seq });
      },
    });
    if (!ok) {
      this.o.hooks.acksFull();
      return;
    }
    this.o.sender.send(req.targetAddr, { type: 'ping', seq, target: req.target, sourceAddr: self.address });
  }

  private reconnectTick(): void {
    if (!this.probing) return;
    this.reconnectTimer = this.o.clock.setTimeout(() => this.reconnectTick(), this.c.reconnectIntervalMs);
    const now = this.now;
    const m = this.o.membership;
    if (this.phis.size > this.c.membersMax) for (const id of [...this.phis.keys()]) if (!m.get(id)) this.phis.delete(id);
    if (this.srtt.size > this.c.membersMax) for (const id of [...this.srtt.keys()]) if (!m.get(id)) this.srtt.delete(id);
    if (this.lastNoticeMs.size > this.c.membersMax) for (const id of [...this.lastNoticeMs.keys()]) if (!m.get(id)) this.lastNoticeMs.delete(id);
    const [target] = m.randomMembers(1, (r) => r.state === 'dead' && now - r.stateChangedMs < this.c.deadRetainMs);
    if (target) this.reconnect(target);
  }

  /**
   * Tells `target`, which this member just started suspecting on another member's word, of the
   * suspicion at once: one ping with it riding along (Lifeguard's buddy system, sooner than this
   * member's next turn to probe it, which is up to a round of n − 1 intervals away). The suspect
   * refutes, or answers an old claim with its current alive, in its ack. Not a probe: a missing
   * ack confirms nothing. At most once per probe interval per member (shared with reconnection).
   */
  tellSuspect(target: MemberRecord): void {
    if (!this.probing || !this.c.lifeguard || target.state !== 'suspect') return;
    const now = this.now;
    const last = this.lastNoticeMs.get(target.id);
    if (last !== undefined && now - last < this.c.probeIntervalMs) return;
    this.lastNoticeMs.set(target.id, now);
    const self = this.o.membership.self();
    const notice = encodeUpdate({ kind: 'suspect', member: target.id, incarnation: target.incarnation, from: target.accuser ?? self.id });
    this.o.sender.send(target.address, { type: 'ping', seq: this.nextSeq(), target: target.id, sourceAddr: self.address }, [notice]);
  }

  /**
   * Pings `target`, held dead, with a `dead` notice riding along: if it is alive it refutes in
   * its ack. Called by the reconnect timer, and by the agent when a member held dead is heard
   * from (a healed cut: tell it at once rather than at the next tick). At most once per probe
   * interval per member.
   */
  reconnect(target: MemberRecord): void {
    if (!this.probing || target.state !== 'dead') return;
    const now = this.now;
    const last = this.lastNoticeMs.get(target.id);
    if (last !== undefined && now - last < this.c.probeIntervalMs) return;
    this.lastNoticeMs.set(target.id, now);
    const self = this.o.membership.self();
    const seq = this.nextSeq();
    const ok = this.acks.register(seq, this.c.probeIntervalMs, { onAck: () => this.o.hooks.reconnected(target) });
    if (!ok) return;
    // It refutes on reading this, and its refutation rides back on the ack.
    const notice = encodeUpdate({ kind: 'dead', member: target.id, incarnation: target.incarnation, from: self.id });
    this.o.sender.send(target.address, { type: 'ping', seq, target: target.id, sourceAddr: self.address }, [notice]);
  }
}
