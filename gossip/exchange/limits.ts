/**
 * Every bound of the record exchange between regions, named, with why it has the value it has.
 * `ExchangeLimits` lets a deployment (and tests) change them; the defaults are what `edgeq dev`
 * and `edgeq gateway` run with.
 */

import { EdgeqError } from '../../src/core/index.ts';

export interface ExchangeLimits {
  /** Bytes one fetch may return for one partition (the origin's `max_bytes`). */
  fetchBytesMax: number;
  /** Long-poll wait of one fetch at the source: an idle origin costs one request per wait. */
  fetchWaitMs: number;
  /** Bound on one fetch round trip beyond its wait (a blackholed link fails after this). */
  fetchTimeoutMs: number;
  /** Bytes fetched but not yet applied, per source link, over all its partitions. */
  inflightBytesPerLinkMax: number;
  /** Bandwidth the exchange may use per source link (bytes/s), shared fairly among partitions; 0 = no limit. */
  linkBandwidthBytesPerSec: number;
  /** Backoff after a failed fetch or append: full jitter between 0 and min(max, min·2^attempt). */
  backoffMsMin: number;
  backoffMsMax: number;
  /** A replicator whose cursor did not move for this long while its source held more is stalled, and restarted. */
  stallMs: number;
  /** How often the stall watchdog and the cursor publisher look. */
  watchIntervalMs: number;
  /** Coalescing delay of cursor publications to the mesh (one state update per key at most this often). */
  publishDelayMs: number;
  /** Retention gaps remembered for `/v1/mesh` (oldest dropped first; the metric keeps counting). */
  gapsMax: number;
  /** Bound on one local acks=all append of an applied batch. */
  appendTimeoutMs: number;
  /** Bytes of consecutive applied batches sent in one append request (a run). */
  applyRunBytesMax: number;
  /** Long polls of one replicator in flight at once (a fetch session: each continues the one before). */
  fetchPipelineDepth: number;
  /** Appends of one replicator in flight at once (each conditional on the one before it landing). */
  applyInflightMax: number;
  /** Longest wait between probes of a link that failed (a healed link is back within this). */
  probeIntervalMsMax: number;
}

export const EXCHANGE_DEFAULTS: Readonly<ExchangeLimits> = Object.freeze({
  // 4 MiB: one fetch is in flight per partition, so a partition moves at most fetchBytesMax per
  // RTT: 80 MiB/s at 50 ms (1 MiB, Kafka's replica.fetch.max.bytes, capped 1 KiB records at
  // ~16k/s over one link). The link's bandwidth limit, not the fetch size, should be what binds.
  fetchBytesMax: 4 * 1024 * 1024,
  fetchWaitMs: 500,
  fetchTimeoutMs: 5_000,
  // Four full fetches per link: enough to keep a long link busy, small next to a gateway's heap.
  inflightBytesPerLinkMax: 16 * 1024 * 1024,
  linkBandwidthBytesPerSec: 0,
  backoffMsMin: 100,
  backoffMsMax: 5_000,
  // Four fetch timeouts: a link that fails retries well inside this, so only a replicator that is
  // really stuck (an awaited promise that never settles, a source that answers but never moves) is hit.
  stallMs: 20_000,
  watchIntervalMs: 1_000,
  publishDelayMs: 50,
  gapsMax: 256,
  appendTimeoutMs: 30_000,
  // Eight: one-record batches (a producer without linger) are then applied at group-commit speed
  // instead of one local round trip each; more buys little on a 2-core machine.
  applyInflightMax: 8,
  // Two: the second long poll waits parked at the source while the first's answer crosses the
  // link, so a record appended then goes out at once (one way, not a round trip plus).
  fetchPipelineDepth: 2,
  // 1 MiB: a run of one-record batches (100 B each, ~170 B with headers) is thousands of
  // batches' worth of request overhead saved, and one request stays well under the frame bound.
  applyRunBytesMax: 1024 * 1024,
  // Half a second: a probe is one metadata request, and a healed link should not wait out a long
  // backoff (catch-up after a partition is measured from the heal).
  probeIntervalMsMax: 500,
});

/** The limits with `overrides` applied, checked. */
export function exchangeLimits(overrides: Partial<ExchangeLimits> = {}): ExchangeLimits {
  const l = { ...EXCHANGE_DEFAULTS, ...overrides };
  for (const [k, v] of Object.entries(l)) {
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) throw bad(k, `exchange limit ${k} must be a finite number >= 0, got ${String(v)}`);
  }
  if (l.fetchBytesMax < 1024) throw bad('fetchBytesMax', `exchange limit fetchBytesMax must be at least 1024, got ${l.fetchBytesMax}`);
  if (l.backoffMsMax < l.backoffMsMin) throw bad('backoffMsMax', 'exchange limit backoffMsMax must be >= backoffMsMin');
  if (l.applyInflightMax < 1) throw bad('applyInflightMax', 'exchange limit applyInflightMax must be at least 1');
  if (l.fetchPipelineDepth < 1) throw bad('fetchPipelineDepth', 'exchange limit fetchPipelineDepth must be at least 1');
  return l;
}

function bad(key: string, message: string): EdgeqError {
  return new EdgeqError('INVALID_CONFIG', message, { details: { key } });
}
