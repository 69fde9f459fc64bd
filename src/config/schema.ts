/**
 * The one typed configuration of an edgeq process: its shape, types and bounds (zod), and the
 * defaults. Later parts of the system add their sections here.
 */
import { z } from 'zod';
import { LOG_DEFAULTS, FLUSH_POLICIES } from '../log/index.ts';

const int = (min: number, max = Number.MAX_SAFE_INTEGER) => z.number().int().min(min).max(max);
const port = int(0, 65535);

export const logSchema = z
  .object({
    segmentBytesMax: int(1, 2 ** 32 - 1),
    segmentMsMax: int(1),
    indexIntervalBytes: int(1),
    messageBytesMax: int(1, 2 ** 31 - 1),
    flushPolicy: z.enum(FLUSH_POLICIES as [string, ...string[]]),
    flushIntervalMs: int(1),
    retentionMs: int(-1),
    retentionBytes: int(-1),
    checkpointIntervalMs: int(1),
    appendQueueBytesMax: int(1),
    writeGroupBytesMax: int(1),
    writeGroupBatchesMax: int(1, 1024),
    validateRecords: z.boolean(),
    tailCacheBytesMax: int(0, 2 ** 31 - 1),
  })
  .strict();

export const configSchema = z
  .object({
    broker: z
      .object({
        /** Broker id, unique in its cell. */
        id: int(0, 2 ** 31 - 1),
        /** Region (site) this process serves. */
        region: z.string().regex(/^[a-z][a-z0-9-]{0,62}$/, 'lowercase letters, digits and dashes, 1-63 chars'),
        host: z.string().min(1),
        /** Binary protocol port; 0 picks a free one. */
        port,
        dataDir: z.string().min(1),
        /** Open file handles shared by every log of the broker. */
        openFilesMax: int(16, 1_000_000),
        retentionCheckIntervalMs: int(100),
        /** Port of the admin HTTP endpoint (`GET /metrics`, `/healthz`, `/readyz`); 0 turns it off. */
        adminPort: port,
        /** Address the admin endpoint binds: loopback unless a container's probes and scraper need more. */
        adminHost: z.string().min(1),
      })
      .strict(),
    /** Defaults for every topic's log; a topic may override them. */
    log: logSchema,
    /** Membership in a regional cell through an arbiter; `arbiter: none` runs a lone broker. */
    cell: z
      .object({
        arbiter: z.enum(['none', 'embedded', 'etcd']),
        /** Comma-separated host:port list of the arbiter (the embedded process, or etcd members). */
        endpoints: z.string(),
        id: z.string().regex(/^[a-z0-9][a-z0-9-]{0,62}$/, 'lowercase letters, digits and dashes, 1-63 chars'),
        leaseTtlMs: int(1000, 60_000),
        /** Brokers the cell is meant to have (the offsets topic waits for them). */
        size: int(1, 64),
        replicaLagTimeMaxMs: int(100, 600_000),
      })
      .strict(),
    logging: z
      .object({
        level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
      })
      .strict(),
  })
  .strict();

export type Config = z.infer<typeof configSchema>;

export const DEFAULT_CONFIG: Config = {
  broker: {
    id: 1,
    region: 'local',
    host: '127.0.0.1',
    port: 9092,
    dataDir: './data',
    openFilesMax: 1024,
    retentionCheckIntervalMs: 60_000,
    adminPort: 0,
    adminHost: '127.0.0.1',
  },
  log: { ...LOG_DEFAULTS },
  cell: { arbiter: 'none', endpoints: '', id: 'local', leaseTtlMs: 2000, size: 3, replicaLagTimeMaxMs: 10_000 },
  logging: { level: 'info' },
};

/** Environment variables that set a key directly, for the settings people change most. */
export const ENV_ALIASES: Readonly<Record<string, string>> = {
  EDGEQ_DATA_DIR: 'broker.dataDir',
  EDGEQ_LOG_LEVEL: 'logging.level',
  EDGEQ_REGION: 'broker.region',
  EDGEQ_ARBITER: 'cell.arbiter',
  EDGEQ_ARBITER_ENDPOINTS: 'cell.endpoints',
};
