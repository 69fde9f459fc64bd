/**
 * Region-level features carried by the mesh: each region's entry (health, load, forecast,
 * addresses) and the catalogue of global topics, over the mesh agent's replicated state.
 */
export { MeshKeys, type MeshStateAccess, type MeshStateEntry } from './mesh-state.ts';
export { FORECAST_SUMMARY_POINTS_MAX, NO_FORECAST, type ForecastSummary, type RegionHealth, type RegionInfo, type RegionLoad } from './region-info.ts';
export { RegionPublisher, REGION_HEALTH_TIMEOUT_MS, REGION_PUBLISH_INTERVAL_MS, REGION_REFRESH_INTERVAL_MS, type RegionSources } from './region-publisher.ts';
export {
  CATALOGUE_CONFLICTS_MAX,
  CATALOGUE_RECONCILE_INTERVAL_MS,
  CATALOGUE_SETTLE_MS,
  GlobalCatalogue,
  type CatalogueConflict,
  type CatalogueEntry,
  type GlobalTopic,
  type GlobalTopicDef,
  type LocalTopic,
  type RegionCell,
} from './catalogue.ts';
