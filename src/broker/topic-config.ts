/**
 * Per-topic configuration: the string map users send (Kafka-style dotted keys) turned into log
 * settings and topic policy, validated key by key so an error names the bad key.
 */
import { EdgeqError } from '../core/index.ts';
import { COMPRESSION_NAMES, FLUSH_POLICIES, resolveLogConfig, type CompressionName, type FlushPolicy, type LogConfig } from '../log/index.ts';

/** The parsed, effective settings of a topic. */
export interface TopicSettings {
  log: LogConfig;
  /** Codecs producers may use for this topic's batches. */
  compressionAllowed: CompressionName[];
  /** acks=all needs at least this many in-sync replicas. */
  minInsyncReplicas: number;
  /** Whether a replica outside the ISR may become leader when no ISR member is alive (data loss). */
  uncleanLeaderElection: boolean;
  /** `local` stays in its region; `global` is in every region's cell and exchanged between them. */
  scope: TopicScope;
}

/** Where a topic lives: its region only, or every region. */
export type TopicScope = 'local' | 'global';
export const TOPIC_SCOPES: readonly TopicScope[] = ['local', 'global'];

type Parser = (value: string, key: string) => unknown;

const intParser =
  (min: number, max = Number.MAX_SAFE_INTEGER): Parser =>
  (value, key) => {
    if (!/^-?\d+$/.test(value)) throw bad(key, value, 'an integer');
    const n = Number(value);
    if (!Number.isSafeInteger(n) || n < min || n > max) throw bad(key, value, `an integer in [${min}, ${max}]`);
    return n;
  };

/** Dotted key → [LogConfig field or policy field, parser]. */
const KEYS: Record<string, [keyof LogConfig | 'compressionAllowed' | 'minInsyncReplicas' | 'uncleanLeaderElection' | 'scope', Parser]> = {
  'retention.ms': ['retentionMs', intParser(-1)],
  'retention.bytes': ['retentionBytes', intParser(-1)],
  'segment.bytes': ['segmentBytesMax', intParser(1024, 2 ** 32 - 1)],
  'segment.ms': ['segmentMsMax', intParser(1)],
  'max.message.bytes': ['messageBytesMax', intParser(128, 64 * 1024 * 1024)],
  'flush.interval.ms': ['flushIntervalMs', intParser(1)],
  'tail.cache.bytes': ['tailCacheBytesMax', intParser(0, 2 ** 31 - 1)],
  'flush.policy': [
    'flushPolicy',
    (value, key) => {
      if (!(FLUSH_POLICIES as readonly string[]).includes(value)) throw bad(key, value, `one of ${FLUSH_POLICIES.join(', ')}`);
      return value as FlushPolicy;
    },
  ],
  'compression.allowed': [
    'compressionAllowed',
    (value, key) => {
      const names = value.split(',').map((s) => s.trim());
      for (const n of names) {
        if (!(COMPRESSION_NAMES as string[]).includes(n)) throw bad(key, value, `a comma list of ${COMPRESSION_NAMES.join(', ')}`);
      }
      return [...new Set(names)] as CompressionName[];
    },
  ],
  'min.insync.replicas': ['minInsyncReplicas', intParser(1, 32)],
  scope: [
    'scope',
    (value, key) => {
      if (!(TOPIC_SCOPES as readonly string[]).includes(value)) throw bad(key, value, `one of ${TOPIC_SCOPES.join(', ')}`);
      return value as TopicScope;
    },
  ],
  'unclean.leader.election.enable': [
    'uncleanLeaderElection',
    (value, key) => {
      if (value !== 'true' && value !== 'false') throw bad(key, value, 'true or false');
      return value === 'true';
    },
  ],
};

export const TOPIC_CONFIG_KEYS = Object.keys(KEYS);

function bad(key: string, value: string, want: string): EdgeqError {
  return new EdgeqError('INVALID_ARGUMENT', `topic config ${key}=${JSON.stringify(value)} must be ${want}`, {
    details: { key, value },
  });
}

/**
 * The default `min.insync.replicas` for a replication factor: 2 from three replicas on, so an
 * `acks=all` write is on two replicas before it is acknowledged and a single failure loses
 * nothing acknowledged; 1 below (two replicas: requiring both would stop writes at the first
 * failure).
 */
export function defaultMinInsyncReplicas(replicationFactor: number): number {
  return replicationFactor >= 3 ? 2 : 1;
}

/**
 * Parses a topic's overrides on top of the broker's log defaults; throws naming the bad key.
 * `replicationFactor` sets the default of `min.insync.replicas` (1 when absent: a lone broker).
 */
export function parseTopicConfig(overrides: Readonly<Record<string, string>>, defaults: Partial<LogConfig>, replicationFactor = 1): TopicSettings {
  const log: Partial<LogConfig> = { ...defaults };
  const settings: Omit<TopicSettings, 'log'> = {
    compressionAllowed: [...COMPRESSION_NAMES],
    minInsyncReplicas: defaultMinInsyncReplicas(replicationFactor),
    uncleanLeaderElection: false,
    scope: 'local',
  };
  for (const [key, value] of Object.entries(overrides)) {
    const spec = KEYS[key];
    if (!spec) {
      throw new EdgeqError('INVALID_ARGUMENT', `unknown topic config key "${key}" (known: ${TOPIC_CONFIG_KEYS.join(', ')})`, {
        details: { key },
      });
    }
    if (typeof value !== 'string') throw bad(key, String(value), 'a string');
    const [field, parse] = spec;
    const parsed = parse(value, key);
    if (field === 'compressionAllowed') settings.compressionAllowed = parsed as CompressionName[];
    else if (field === 'minInsyncReplicas') settings.minInsyncReplicas = parsed as number;
    else if (field === 'uncleanLeaderElection') settings.uncleanLeaderElection = parsed as boolean;
    else if (field === 'scope') settings.scope = parsed as TopicScope;
    else (log as Record<string, unknown>)[field] = parsed;
  }
  return { ...settings, log: resolveTopicLog(log, overrides) };
}

/**
 * The topic's log settings with every relation between them checked. A conflict the overrides
 * make (e.g. `segment.bytes` below the `max.message.bytes` in force) is the request's fault:
 * INVALID_ARGUMENT naming the topic keys, not the broker's INVALID_CONFIG.
 */
function resolveTopicLog(log: Partial<LogConfig>, overrides: Readonly<Record<string, string>>): LogConfig {
  try {
    return resolveLogConfig(log);
  } catch (err) {
    if (!(err instanceof EdgeqError) || err.code !== 'INVALID_CONFIG' || Object.keys(overrides).length === 0) throw err;
    let message = err.message;
    for (const [key, [field]] of Object.entries(KEYS)) message = message.replaceAll(`log.${field}`, key);
    throw new EdgeqError('INVALID_ARGUMENT', `topic config: ${message}`, { cause: err, details: { ...err.details, overrides: Object.keys(overrides) } });
  }
}

/** The effective configuration as a string map (DescribeConfigs). */
export function describeTopicConfig(s: TopicSettings): Record<string, string> {
  return {
    'retention.ms': String(s.log.retentionMs),
    'retention.bytes': String(s.log.retentionBytes),
    'segment.bytes': String(s.log.segmentBytesMax),
    'segment.ms': String(s.log.segmentMsMax),
    'max.message.bytes': String(s.log.messageBytesMax),
    'flush.interval.ms': String(s.log.flushIntervalMs),
    'tail.cache.bytes': String(s.log.tailCacheBytesMax),
    'flush.policy': s.log.flushPolicy,
    'compression.allowed': s.compressionAllowed.join(','),
    'min.insync.replicas': String(s.minInsyncReplicas),
    'unclean.leader.election.enable': String(s.uncleanLeaderElection),
    scope: s.scope,
  };
}
