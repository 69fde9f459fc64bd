/** Whole meshes in one process for tests and the benchmark: the heap clock, the simulated network, SimCluster and the bounds it is held to. */
export { SimClock } from './sim-clock.ts';
export { SimNetwork, type HandlingDelay, type LinkSettings, type SimNetworkOptions, type SimNetworkStats } from './sim-network.ts';
export { SimCluster, SIM_KEY, SIM_STEP_MS, type FalseEvent, type SimClusterOptions } from './sim-cluster.ts';
export { detectionBoundMs, healBoundMs, memberlistSuspicion, MEMBERLIST_LAN, MEMBERLIST_WAN, type DetectionSettings } from './expectations.ts';
