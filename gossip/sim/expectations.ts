/**
 * The bounds the simulation is held to, worked out from the configuration, and memberlist's
 * figures for comparison (its suspicion timeout formula, state.go suspicionTimeout and
 * suspicion.go, with its published default configurations, config.go DefaultLANConfig and
 * DefaultWANConfig). Shared by the simulation tests and bench/mesh-sim.ts.
 */
import type { MeshConfig } from '../agent/config.ts';
import { suspicionTimeoutMs } from '../membership/suspicion.ts';

/** memberlist's defaults that enter the detection time. */
export const MEMBERLIST_LAN = { probeIntervalMs: 1_000, probeTimeoutMs: 500, suspicionMult: 4, suspicionMaxTimeoutMult: 6 } as const;
export const MEMBERLIST_WAN = { probeIntervalMs: 5_000, probeTimeoutMs: 3_000, suspicionMult: 6, suspicionMaxTimeoutMult: 6 } as const;

/** The settings the formulas need. */
export type DetectionSettings = Pick<MeshConfig, 'probeIntervalMs' | 'suspicionMult' | 'suspicionMaxTimeoutMult'>;

/**
 * memberlist's suspicion timeouts for n members:
 *   min = SuspicionMult × max(1, log10 n) × ProbeInterval
 *   max = SuspicionMaxTimeoutMult × min   (Lifeguard: the wait before any confirmation)
 */
export function memberlistSuspicion(s: DetectionSettings, members: number): { minMs: number; maxMs: number } {
  const minMs = suspicionTimeoutMs(s.suspicionMult, members, s.probeIntervalMs);
  return { minMs, maxMs: s.suspicionMaxTimeoutMult * minMs };
}

/**
 * The detection bound for the same settings: a probe of the dead member fails within two probe
 * intervals of the crash (the probe in flight, then the next), the suspicion runs out at its
 * longest (max, no confirmation), and `dead` spreads in a few gossip rounds (~log4 n rounds with
 * 3 gossip targets; 10 rounds allowed).
 */
export function detectionBoundMs(c: Pick<MeshConfig, 'probeIntervalMs' | 'suspicionMult' | 'suspicionMaxTimeoutMult' | 'gossipIntervalMs'>, members: number): number {
  return 2 * c.probeIntervalMs + memberlistSuspicion(c, members).maxMs + 10 * c.gossipIntervalMs;
}

/**
 * The bound on convergence after a heal: the first reconnection ping across the healed cut goes
 * out within one reconnect interval (every member pings one member it holds dead), its ack and
 * push-pull take a few one-way delays, then refutations spread by gossip: ~log2 n rounds (each
 * informed member tells 3 others a round; doubled for loss and for the refutations that must
 * themselves be triggered), plus the same again for the other side's refutations.
 */
export function healBoundMs(c: Pick<MeshConfig, 'reconnectIntervalMs' | 'gossipIntervalMs'>, members: number, oneWayMs: number): number {
  return c.reconnectIntervalMs + 8 * oneWayMs + 4 * Math.ceil(Math.log2(Math.max(2, members))) * c.gossipIntervalMs;
}
