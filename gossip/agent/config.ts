/**
 * The mesh agent's tuning and bounds, their defaults, and the checks run before anything starts
 * (a bad value is an INVALID_CONFIG EdgeqError naming the key; so is a broken relation between
 * two bounds).
 *
 * The defaults are set for edgeq's mesh: a few members (a gateway per region, 3 regions by
 * default) over WAN links of ~50 ms RTT. The targets: median crash detection ≤ 3 s,
 * zero false deaths in 10 minutes with 5% loss on every link and one member at full CPU,
 * convergence ≤ 2 s after a partition heals. memberlist's WAN defaults (probe 5 s, timeout 3 s,
 * suspicion multiplier 6) are the anchor: a suspicion timeout of 6 × max(1, log10 n) × 5 s = 30 s
 * for up to 10 members, up to 6 × that (Lifeguard's max) before confirmations.
 *
 * Detection, for n ≤ 10 members (log10 n ≤ 1, so memberlist's node scale is 1):
 *   wait for the next probe of the dead member  ≈ probeIntervalMs / 2 on average     250 ms
 *   direct ping, then ping-reqs, until the probe's end   = probeIntervalMs            500 ms
 *   suspicion timeout once another member confirms = suspicionMult × 1 × 500 ms     1500 ms
 *   gossip of `dead` to the others ≈ one gossip interval + one-way delay             ~225 ms
 *   ⇒ ≈ 2.5 s median (≤ 3 s); the simulation measures it (bench:mesh:sim).
 * With three members Lifeguard expects k = suspicionMult − 2 = 1 confirmation, which the other
 * prober gives within about one probe round (2 × 500 ms) of its own failed probe; before it, the
 * timeout is suspicionMaxTimeoutMult × 1.5 s = 9 s, which is what a single accuser's mistake (a
 * slow or cut-off prober) has to be refuted within.
 *
 * probeTimeoutMs 200: four RTTs of a 50 ms link (memberlist: "the 99th percentile of RTT"),
 * leaving room for event-loop lag on a loaded machine; a late direct ack still counts until the
 * probe's end (probeIntervalMs), and Lifeguard stretches both when this member is the slow one.
 *
 * False deaths at 5% loss: a probe fails only if the direct round trip fails (1 − 0.95² ≈ 9.8%),
 * the second direct ping sent with the ping-reqs fails too (9.8%), and every one of the 3
 * ping-reqs (four legs each: 1 − 0.95⁴ ≈ 18.5%) fails: 0.098² × 0.185³ ≈ 6e-5 per probe with 3
 * other members to ask; with 3 members (one to ask) 0.098² × 0.185 ≈ 1.8e-3, about one false
 * suspicion per member every 5 minutes at 2 probes a second (simulated: ~10 per member-hour). A false suspicion becomes a death
 * only if the suspect does not refute within the timeout: its refutation travels by the buddy
 * ping, the gossip of the suspicion and its own gossip, each retransmitted retransmitMult ×
 * ceil(log10(n + 1)) times, so the chance that all of them are lost within 1.5-9 s is far below
 * one in the 10 minutes' ~2,400 probes of a small mesh.
 *
 * Convergence after a heal: each member pings one member it holds dead every reconnectIntervalMs,
 * and at once any member held dead that it hears from, with a `dead` notice riding along; the
 * pinged member refutes in its ack (so the pinger sees it alive one RTT later) and the ack
 * triggers a push-pull that merges both sides' state. In a 50/50 split every such ping crosses
 * the healed cut, so the first lands within reconnectIntervalMs (1 s) and usually far sooner;
 * the refutations then spread by gossip (200 ms rounds).
 */
import { EdgeqError } from '../../src/core/index.ts';
import { ENVELOPE_BYTES_MAX } from '../wire/codec.ts';
import { ALIVE_UPDATE_BYTES_MAX, MEMBER_SNAPSHOT_BYTES_MAX, PRIMARY_BYTES_MAX, STATE_UPDATE_OVERHEAD_BYTES } from '../wire/messages.ts';

/** Timing and protocol settings. */
export interface MeshConfig {
  /** Time between probes (stretched by the local health multiplier). */
  probeIntervalMs: number;
  /** Wait for a direct ack before asking others (stretched likewise). */
  probeTimeoutMs: number;
  /** Members asked to ping-req a member that missed its direct ack (memberlist IndirectChecks). */
  indirectChecks: number;
  /** Suspicion timeout = suspicionMult × max(1, log10 n) × probeIntervalMs (memberlist). */
  suspicionMult: number;
  /** Lifeguard: an unconfirmed suspicion waits up to this × the timeout above. */
  suspicionMaxTimeoutMult: number;
  /** Each update is piggybacked up to retransmitMult × ceil(log10(n + 1)) times (memberlist). */
  retransmitMult: number;
  /** Time between gossip rounds (queued updates sent to gossipNodes members). */
  gossipIntervalMs: number;
  gossipNodes: number;
  /** Dead members still receive gossip this long (memberlist GossipToTheDeadTime). */
  gossipToTheDeadMs: number;
  /** Time between anti-entropy push-pulls with a random member (scaled past 32 members, as memberlist). */
  pushPullIntervalMs: number;
  /** Time between pings to a member held dead (a healed partition is seen by the first ack). */
  reconnectIntervalMs: number;
  /** Bound on one push-pull exchange (connect, send, answer). */
  tcpTimeoutMs: number;
  /** Dead and left members are forgotten after this. */
  deadRetainMs: number;
  /** Lifeguard's local health multiplier bound (memberlist AwarenessMaxMultiplier). */
  lhmMax: number;
  /** Lifeguard on (health multiplier, dynamic suspicion, buddy pings, nacks) or plain SWIM. */
  lifeguard: boolean;
  /** Phi above which a member is flagged (it reports; SWIM decides: see phi-accrual.ts). */
  phiThreshold: number;
  /** Ack intervals kept per member for phi. */
  phiWindowMax: number;
  /** Floor on phi's standard deviation. */
  phiStdDevMsMin: number;
  /** First wait before retrying seeds when no seed answered; doubled up to joinRetryMsMax. */
  joinRetryMs: number;
  joinRetryMsMax: number;
  /** leave() keeps gossiping this long so the goodbye spreads, then stops. */
  leaveWaitMs: number;
}

/** Bounds on memory and message sizes. */
export interface MeshLimits {
  /** Datagrams over this are never sent nor accepted (fits one packet on a WAN path: 1500 MTU − IPv6/UDP headers − tunnel room). */
  datagramBytesMax: number;
  /** A push-pull frame (the whole state) over this is refused. */
  frameBytesMax: number;
  /** Members in the table, this one included. */
  membersMax: number;
  /** Updates waiting to be piggybacked. */
  broadcastQueueMax: number;
  /** Acks awaited at once (own probes and ping-reqs forwarded for others). */
  pendingAcksMax: number;
  /** Push-pulls this member runs at once. */
  pushPullsInFlightMax: number;
  stateEntriesMax: number;
  stateValueBytesMax: number;
  /** Keys and values of the whole state. */
  stateBytesMax: number;
  /** A tombstone is purged this long after its deletion was written. */
  tombstoneRetainMs: number;
  /** State versions further ahead of this member's clock are refused. */
  futureDriftMsMax: number;
}

export const DEFAULT_MESH_CONFIG: Readonly<MeshConfig> = Object.freeze({
  probeIntervalMs: 500,
  probeTimeoutMs: 200,
  indirectChecks: 3,
  suspicionMult: 3,
  suspicionMaxTimeoutMult: 6,
  retransmitMult: 4,
  gossipIntervalMs: 200,
  gossipNodes: 3,
  gossipToTheDeadMs: 60_000,
  pushPullIntervalMs: 10_000,
  reconnectIntervalMs: 1_000,
  tcpTimeoutMs: 3_000,
  deadRetainMs: 10 * 60_000,
  lhmMax: 8,
  lifeguard: true,
  phiThreshold: 8,
  phiWindowMax: 100,
  phiStdDevMsMin: 100,
  joinRetryMs: 500,
  joinRetryMsMax: 30_000,
  leaveWaitMs: 500,
});

export const DEFAULT_MESH_LIMITS: Readonly<MeshLimits> = Object.freeze({
  datagramBytesMax: 1400,
  frameBytesMax: 4 * 1024 * 1024,
  membersMax: 512,
  broadcastQueueMax: 1024,
  pendingAcksMax: 1024,
  pushPullsInFlightMax: 4,
  stateEntriesMax: 4096,
  stateValueBytesMax: 1024,
  stateBytesMax: 1024 * 1024,
  tombstoneRetainMs: 60 * 60_000,
  futureDriftMsMax: 60_000,
});

/** The UDP payload of an IPv4 datagram at most. */
export const DATAGRAM_BYTES_LIMIT = 65_507;
/** Below this an alive update might not fit beside a ping-req. */
export const DATAGRAM_BYTES_MIN = ENVELOPE_BYTES_MAX + PRIMARY_BYTES_MAX + 1 + ALIVE_UPDATE_BYTES_MAX;

function bad(key: string, message: string): EdgeqError {
  return new EdgeqError('INVALID_CONFIG', `mesh ${key}: ${message}`, { details: { key } });
}

function intIn(obj: Record<string, unknown>, key: string, min: number, max: number, prefix: string): void {
  const v = obj[key];
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) throw bad(`${prefix}.${key}`, `expected an integer in [${min}, ${max}], got ${JSON.stringify(v)}`);
}

/** The largest push-pull payload (frame without its prefix) a member with these bounds can have to send. */
export function pushPullBytesMax(limits: MeshLimits): number {
  return ENVELOPE_BYTES_MAX + 1 + 2 + limits.membersMax * MEMBER_SNAPSHOT_BYTES_MAX + 4 + limits.stateEntriesMax * (STATE_UPDATE_OVERHEAD_BYTES - 1) + limits.stateBytesMax;
}

/** Defaults merged with `config`, checked; throws INVALID_CONFIG naming the key. */
export function resolveConfig(config: Partial<MeshConfig> = {}): MeshConfig {
  if (config === null || typeof config !== 'object') throw bad('config', 'expected an object');
  for (const k of Object.keys(config)) if (!(k in DEFAULT_MESH_CONFIG)) throw bad(`config.${k}`, 'unknown key');
  const c = { ...DEFAULT_MESH_CONFIG, ...config } as MeshConfig;
  const o = c as unknown as Record<string, unknown>;
  const HOUR = 3_600_000;
  intIn(o, 'probeIntervalMs', 10, HOUR, 'config');
  intIn(o, 'probeTimeoutMs', 1, HOUR, 'config');
  intIn(o, 'indirectChecks', 0, 16, 'config');
  intIn(o, 'suspicionMult', 1, 100, 'config');
  intIn(o, 'suspicionMaxTimeoutMult', 1, 100, 'config');
  intIn(o, 'retransmitMult', 1, 100, 'config');
  intIn(o, 'gossipIntervalMs', 1, HOUR, 'config');
  intIn(o, 'gossipNodes', 1, 64, 'config');
  intIn(o, 'gossipToTheDeadMs', 0, 24 * HOUR, 'config');
  intIn(o, 'pushPullIntervalMs', 100, 24 * HOUR, 'config');
  intIn(o, 'reconnectIntervalMs', 10, HOUR, 'config');
  intIn(o, 'tcpTimeoutMs', 10, HOUR, 'config');
  intIn(o, 'deadRetainMs', 0, 7 * 24 * HOUR, 'config');
  intIn(o, 'lhmMax', 1, 64, 'config');
  intIn(o, 'phiWindowMax', 2, 10_000, 'config');
  intIn(o, 'phiStdDevMsMin', 1, HOUR, 'config');
  intIn(o, 'joinRetryMs', 10, HOUR, 'config');
  intIn(o, 'joinRetryMsMax', 10, 24 * HOUR, 'config');
  intIn(o, 'leaveWaitMs', 0, HOUR, 'config');
  if (typeof c.lifeguard !== 'boolean') throw bad('config.lifeguard', 'expected a boolean');
  if (typeof c.phiThreshold !== 'number' || !Number.isFinite(c.phiThreshold) || c.phiThreshold <= 0) throw bad('config.phiThreshold', 'expected a positive number');
  // A probe must be able to give up on the direct ping and still leave time for ping-reqs.
  if (c.probeTimeoutMs >= c.probeIntervalMs) throw bad('config.probeTimeoutMs', `must be below probeIntervalMs (${c.probeIntervalMs})`);
  if (c.gossipToTheDeadMs > c.deadRetainMs) throw bad('config.gossipToTheDeadMs', `must not exceed deadRetainMs (${c.deadRetainMs}): a reaped member gets no gossip`);
  if (c.joinRetryMs > c.joinRetryMsMax) throw bad('config.joinRetryMs', `must not exceed joinRetryMsMax (${c.joinRetryMsMax})`);
  return c;
}

/** Defaults merged with `limits`, checked, including the relations between bounds. */
export function resolveLimits(limits: Partial<MeshLimits> = {}): MeshLimits {
  if (limits === null || typeof limits !== 'object') throw bad('limits', 'expected an object');
  for (const k of Object.keys(limits)) if (!(k in DEFAULT_MESH_LIMITS)) throw bad(`limits.${k}`, 'unknown key');
  const l = { ...DEFAULT_MESH_LIMITS, ...limits } as MeshLimits;
  const o = l as unknown as Record<string, unknown>;
  intIn(o, 'datagramBytesMax', DATAGRAM_BYTES_MIN, DATAGRAM_BYTES_LIMIT, 'limits');
  intIn(o, 'frameBytesMax', 1024, 1 << 30, 'limits');
  intIn(o, 'membersMax', 2, 65_535, 'limits');
  intIn(o, 'broadcastQueueMax', 1, 1 << 20, 'limits');
  intIn(o, 'pendingAcksMax', 1, 1 << 20, 'limits');
  intIn(o, 'pushPullsInFlightMax', 1, 64, 'limits');
  intIn(o, 'stateEntriesMax', 0, 1 << 20, 'limits');
  intIn(o, 'stateValueBytesMax', 0, 65_535, 'limits');
  intIn(o, 'stateBytesMax', 0, 1 << 30, 'limits');
  intIn(o, 'tombstoneRetainMs', 0, 30 * 24 * 3_600_000, 'limits');
  intIn(o, 'futureDriftMsMax', 0, 24 * 3_600_000, 'limits');
  // Every state entry must fit in one datagram beside the smallest message (gossip), or it could never be piggybacked.
  const stateUpdateMax = STATE_UPDATE_OVERHEAD_BYTES + l.stateValueBytesMax;
  if (ENVELOPE_BYTES_MAX + 1 + stateUpdateMax > l.datagramBytesMax) {
    throw bad('limits.stateValueBytesMax', `a state entry of ${stateUpdateMax} bytes does not fit a datagram of datagramBytesMax ${l.datagramBytesMax} (at most ${l.datagramBytesMax - ENVELOPE_BYTES_MAX - 1 - STATE_UPDATE_OVERHEAD_BYTES} value bytes)`);
  }
  // The whole state must fit one push-pull, or anti-entropy could never carry it.
  const needed = pushPullBytesMax(l);
  if (needed > l.frameBytesMax) throw bad('limits.frameBytesMax', `a full push-pull can take ${needed} bytes with these bounds (members, entries, state bytes); frameBytesMax is ${l.frameBytesMax}`);
  // One queued update per member must fit, or a burst of joins would evict itself.
  if (l.broadcastQueueMax < l.membersMax) throw bad('limits.broadcastQueueMax', `must be at least membersMax (${l.membersMax})`);
  return l;
}
