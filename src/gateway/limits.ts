/**
 * The gateway's bounds. Every request body, record, long poll and cache is limited by one of these,
 * and `resolveLimits` checks how they relate at start-up.
 */
import { EdgeqError } from '../core/index.ts';

/** Bounds on what one request may carry or hold. */
export interface GatewayLimits {
  /** Largest request body; checked on Content-Length and again on the bytes actually streamed. */
  bodyBytesMax: number;
  /** Largest single record (key + value + header names and values). */
  recordBytesMax: number;
  /** Longest a read may wait for records. */
  waitMsMax: number;
  /** Most records one request may produce or read. */
  recordsMax: number;
  /** Reads waiting at once; beyond this the gateway answers 429 rather than queue long polls. */
  readsInflightMax: number;
  /** Idle consumers kept for reuse (each holds broker connections). */
  consumersIdleMax: number;
  /** Topics whose partition counts are cached. */
  topicCacheMax: number;
  /** How long a cached partition count is trusted. */
  topicCacheTtlMs: number;
  /** SSE streams open at once (each holds a consumer and its connections); beyond this, 429. */
  streamsMax: number;
  /** Quiet time after which a stream sends a heartbeat comment, so proxies keep the connection open. */
  streamHeartbeatMs: number;
  /** Group members held by this gateway (each is a server-side group consumer); beyond this, 429. */
  membersMax: number;
  /** A member that has not polled for this long is expired: its consumer leaves and the group rebalances. */
  memberIdleMsMax: number;
  /**
   * How long the gateway's producers hold a batch open for more records. Each HTTP request waits
   * for its batch, so this is added to every produce's latency; under load, records still gather
   * in batches while earlier ones are in flight (up to 5 per partition), so a short linger costs
   * little throughput.
   */
  produceLingerMs: number;
  /**
   * Batches per partition the gateway's producers keep in flight (1..5). Fewer in flight means
   * records wait for the previous answer and gather into larger batches: fewer requests for the
   * cell to replicate, at the cost of one round trip of waiting.
   */
  produceInflightPerPartitionMax: number;
  /**
   * Largest batch the gateway's record producers build (the target a batch closes at; one larger
   * record still goes alone). With one batch in flight per partition, this is how much a
   * partition carries per round trip when requests queue up. A topic whose max.message.bytes is
   * smaller refuses such a batch, and the producer splits it until it fits.
   */
  produceBatchBytesMax: number;
  /**
   * How long a produce waits for the cell (the producers' delivery timeout): past it the request
   * fails with the typed reason, and `written: false` when no attempt can have written it (a cell
   * that cannot confirm or elect a leader while its arbiter is away answers ARBITER_UNAVAILABLE).
   */
  produceTimeoutMs: number;
}

/** Defaults: 1 MiB records in bodies of up to 8 MiB (room for a batch of several large records). */
export const GATEWAY_LIMITS: GatewayLimits = {
  bodyBytesMax: 8 * 1024 * 1024,
  recordBytesMax: 1024 * 1024,
  waitMsMax: 30_000,
  recordsMax: 10_000,
  readsInflightMax: 256,
  consumersIdleMax: 32,
  topicCacheMax: 1024,
  topicCacheTtlMs: 1_000,
  streamsMax: 64,
  // Under the 30-60 s idle timeouts of common proxies and load balancers.
  streamHeartbeatMs: 15_000,
  membersMax: 256,
  memberIdleMsMax: 30_000,
  produceLingerMs: 0,
  // Measured (2 cores, 50 connections of single-record produce, rf 3): with 5 in flight the
  // records went out 1-3 per batch and the brokers spent ~0.9 ms of CPU per request replicating
  // them; with 1 in flight they gather while the previous batch is out, ~0.15 ms per request,
  // and 3-4x the requests per second.
  produceInflightPerPartitionMax: 1,
  produceBatchBytesMax: 1024 * 1024,
  // Kafka's delivery.timeout.ms: enough for a leader's lease to run out (2 s) and an election and
  // ISR shrink (10 s) several times over before a request gives up.
  produceTimeoutMs: 120_000,
};

/** Fills defaults and checks the bounds: a record must fit in a body, and every bound is positive. */
export function resolveLimits(partial: Partial<GatewayLimits> = {}): GatewayLimits {
  const limits = { ...GATEWAY_LIMITS, ...partial };
  for (const [key, value] of Object.entries(limits)) {
    if (!Number.isSafeInteger(value) || value < 0) throw new EdgeqError('INVALID_CONFIG', `gateway limit ${key} must be a non-negative integer, got ${value}`, { details: { key } });
  }
  // Zero would make every stream a busy loop of heartbeats, or expire members as soon as they join.
  for (const key of ['streamHeartbeatMs', 'memberIdleMsMax'] as const) {
    if (limits[key] === 0) throw new EdgeqError('INVALID_CONFIG', `gateway limit ${key} must be positive`, { details: { key } });
  }
  if (limits.produceInflightPerPartitionMax < 1 || limits.produceInflightPerPartitionMax > 5) {
    throw new EdgeqError('INVALID_CONFIG', `gateway limit produceInflightPerPartitionMax must be within 1..5 (the broker's dedup window), got ${limits.produceInflightPerPartitionMax}`, { details: { key: 'produceInflightPerPartitionMax' } });
  }
  if (limits.produceBatchBytesMax < 1024 || limits.produceBatchBytesMax > 64 * 1024 * 1024) {
    throw new EdgeqError('INVALID_CONFIG', `gateway limit produceBatchBytesMax must be within 1 KiB..64 MiB, got ${limits.produceBatchBytesMax}`, { details: { key: 'produceBatchBytesMax' } });
  }
  if (limits.produceTimeoutMs < 100 || limits.produceTimeoutMs > 3_600_000) {
    throw new EdgeqError('INVALID_CONFIG', `gateway limit produceTimeoutMs must be within 100..3600000 ms, got ${limits.produceTimeoutMs}`, { details: { key: 'produceTimeoutMs' } });
  }
  if (limits.recordBytesMax > limits.bodyBytesMax) {
    throw new EdgeqError('INVALID_CONFIG', `gateway limit recordBytesMax (${limits.recordBytesMax}) exceeds bodyBytesMax (${limits.bodyBytesMax})`, { details: { key: 'recordBytesMax' } });
  }
  return limits;
}
