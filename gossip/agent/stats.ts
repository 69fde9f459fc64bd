/**
 * What a mesh agent counts and reports: counters for metrics, drops by reason, and the observer
 * interface through which tests, simulations and the Prometheus bridge (metrics.ts) follow
 * events as they happen.
 */
import { DROP_REASONS, type DropReason as CodecDropReason } from '../wire/codec.ts';
import type { SuspicionSource } from '../membership/membership.ts';

/**
 * Why a message was not applied: the codec's reasons (before or at authentication) and the
 * agent's (after it).
 */
export type DropReason =
  | CodecDropReason
  /** A message claiming to be from this member: a replay or an impostor. */
  | 'from-self'
  /** A ping for another member id (a member now at an address another used to hold). */
  | 'wrong-target'
  /** More acks awaited than pendingAcksMax: the ping-req is not forwarded. */
  | 'acks-full'
  /** A new member while the table holds membersMax. */
  | 'members-full'
  /** A state entry over a state bound. */
  | 'state-full'
  /** A state entry written more than futureDriftMsMax ahead of this member's clock. */
  | 'state-future'
  /** A JSON state entry whose value does not parse. */
  | 'state-malformed'
  /** A push-pull stream refused by TLS: no client certificate, an untrusted one, or plaintext. */
  | 'tls-refused';

export const ALL_DROP_REASONS: readonly DropReason[] = [...DROP_REASONS, 'from-self', 'wrong-target', 'acks-full', 'members-full', 'state-full', 'state-future', 'state-malformed', 'tls-refused'];

/** Counters of one agent since it was created. */
export interface MeshStats {
  probes: number;
  /** Probes that ended without any ack (each raised or confirmed a suspicion). */
  probesFailed: number;
  /** Suspicions this member started from its own failed probes. */
  suspicions: number;
  refutations: number;
  /** Members this member's own suspicion timers declared dead. */
  deaths: number;
  messagesSent: number;
  messagesReceived: number;
  bytesSent: number;
  bytesReceived: number;
  pushPulls: number;
  pushPullsFailed: number;
  /** Updates evicted from a full piggyback queue. */
  broadcastsDropped: number;
  drops: Record<DropReason, number>;
}

/** A fresh, zeroed set of counters. */
export function emptyStats(): MeshStats {
  const drops = Object.fromEntries(ALL_DROP_REASONS.map((r) => [r, 0])) as Record<DropReason, number>;
  return { probes: 0, probesFailed: 0, suspicions: 0, refutations: 0, deaths: 0, messagesSent: 0, messagesReceived: 0, bytesSent: 0, bytesReceived: 0, pushPulls: 0, pushPullsFailed: 0, broadcastsDropped: 0, drops };
}

/** Events as they happen (every callback optional). */
export interface MeshObserver {
  /** An ack answered one of this member's probes after `ms`. */
  probeRtt?(ms: number, member: string): void;
  /** This member started suspecting `member` (source: its own probe, gossip, or a push-pull). */
  suspicion?(event: { member: string; incarnation: number; from: string; source: SuspicionSource }): void;
  /** This member refuted a claim about itself, now at `incarnation`. */
  refutation?(event: { incarnation: number }): void;
  /** `member` became dead in this member's view; `local` when its own timer decided. */
  death?(event: { member: string; incarnation: number; local: boolean }): void;
  /** A message, or part of one, was not applied. */
  drop?(event: { reason: DropReason; detail: string }): void;
}
