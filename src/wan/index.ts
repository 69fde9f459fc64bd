/**
 * The user-space WAN link emulator of the dev deployment: directed links between regions with
 * latency, jitter, loss, bandwidth and blackhole, carrying UDP and TCP routes on 127.0.0.1.
 * See docs/dev-deployment.md for the model and its limits.
 */
export { LinkEmulator, type LinkChange, type LinkEmulatorOptions, type LinkInfo, type RouteInfo, type RouteSpec } from './emulator.ts';
export { LINK_SETTINGS_DEFAULT, checkLinkPatch, checkRegion, type LinkPatch, type LinkSettings } from './settings.ts';
export { WAN_LIMITS, resolveWanLimits, type WanLimits } from './limits.ts';
export type { LinkCounters } from './link.ts';
