/** The typed, validated configuration of an edgeq process. */
export { configSchema, DEFAULT_CONFIG, ENV_ALIASES, type Config } from './schema.ts';
export { loadConfig, type ConfigIssue, type ConfigSources } from './load.ts';
