/**
 * Failover awareness: when the mesh holds a region whose members are all dead (or have left), its
 * clients move to the regions still alive, so each of those adds its share of the dead region's
 * published forecast to its own plan. The share is even (1 / live regions): the gateways of a
 * region carry no notion of which region a given client will pick, and an even split is what a
 * client round-robining over the regions it still reaches gives.
 */
import type { CapacityForecastPoint } from './types.ts';
import { expandSummary, parseForecastSummary } from './mesh-summary.ts';

/** What this needs of the mesh: its members' states and every region's entry. */
export interface FailoverMeshView {
  readonly self: { readonly region: string };
  readonly members: readonly { readonly region: string; readonly state: 'alive' | 'suspect' | 'dead' | 'left' }[];
  readonly regions: readonly { readonly region: string; readonly forecast: unknown }[];
}

/**
 * The dead regions' forecasts this region takes its share of, on its own steps; with `range`, on
 * the steps the planner is about to plan (past the end of a summary its last point holds).
 */
export function failoverDemand(view: FailoverMeshView, stepMs: number, range?: { from: number; steps: number }): { region: string; forecast: CapacityForecastPoint[] }[] {
  const up = new Set<string>([view.self.region]);
  // A suspect member may still answer: its region is not given up on until the mesh says dead.
  for (const m of view.members) if (m.state === 'alive' || m.state === 'suspect') up.add(m.region);
  const out: { region: string; forecast: CapacityForecastPoint[] }[] = [];
  for (const r of view.regions) {
    if (up.has(r.region)) continue;
    const summary = parseForecastSummary(r.forecast);
    if (summary) out.push({ region: r.region, forecast: expandSummary(summary, stepMs, 1 / up.size, range) });
  }
  return out;
}
