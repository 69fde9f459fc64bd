/**
 * The gossip mesh between regions: SWIM membership with Lifeguard, phi accrual, piggybacked
 * dissemination with push-pull anti-entropy, and versioned state every member converges to.
 * This is the folder's one public entry; see README.md for the design and its numbers.
 */
export { MeshAgent, HOUSEKEEPING_INTERVAL_MS, MESH_PORT_DEFAULT, type AddressTranslator, type MeshAgentOptions, type MeshMember, type MeshSelf, type MemberChange } from './agent/mesh-agent.ts';
export { DEFAULT_MESH_CONFIG, DEFAULT_MESH_LIMITS, resolveConfig, resolveLimits, pushPullBytesMax, type MeshConfig, type MeshLimits } from './agent/config.ts';
export { ALL_DROP_REASONS, type DropReason, type MeshObserver, type MeshStats } from './agent/stats.ts';
export { registerMeshMetrics } from './agent/metrics.ts';
export type { MeshStateEntry } from './state/state-store.ts';
export { versionWallMs, versionWins } from './state/hlc.ts';
export { KEY_BYTES_MIN, KEYS_MAX, type MeshKey } from './wire/keyring.ts';
export type { MemberState } from './wire/messages.ts';
export { NodeTransport, type NodeTransportOptions } from './transport/node-transport.ts';
export { MESH_TLS_MIN_VERSION_DEFAULT, type MeshTls } from './transport/mesh-tls.ts';
export { MAC_ONLY_MODES, type MacOnlyMode } from './wire/codec.ts';
export type { MeshTransport, TransportHandlers, BoundAddress } from './transport/transport.ts';
export { suspicionTimeoutMs, dynamicTimeoutMs } from './membership/suspicion.ts';
export { retransmitLimit } from './dissemination/broadcast-queue.ts';
export { pushPullScaleMs } from './dissemination/push-pull.ts';
export * from './sim/index.ts';
