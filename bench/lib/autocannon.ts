/**
 * autocannon (9.x, no bundled typings) behind a small typed function: one run of a fixed set of
 * requests against a URL, summarised as the benches report it, non-2xx answers and errors counted.
 */
import { createRequire } from 'node:module';

/** One request in the sequence each connection loops over. */
export interface CannonRequest {
  method: 'GET' | 'POST';
  path: string;
  headers: Record<string, string>;
  body?: Buffer | string;
}

export interface CannonOptions {
  /** Base URL, e.g. http://127.0.0.1:8080 */
  url: string;
  /** Each connection sends these in turn, round and round. */
  requests: CannonRequest[];
  connections: number;
  pipelining: number;
  durationSec: number;
  /** Per-request timeout (autocannon's default is 10 s). */
  timeoutSec?: number;
  /** Open loop: requests per second over all connections (autocannon's overallRate); absent: as fast as answers come. */
  overallRate?: number;
}

/** What one run gives, as the bench reports it. */
export interface CannonSummary {
  /** Mean of the per-second samples of completed requests (autocannon's `requests.average`). */
  reqPerSec: number;
  /** Completed requests / run duration (a cross-check of the average). */
  reqPerSecOverall: number;
  completed: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodes: Record<string, number>;
  durationSec: number;
}

interface Histogram {
  average: number;
  total: number;
  p50: number;
  p99: number;
  max: number;
}

interface RawResult {
  duration: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  '2xx': number;
  statusCodeStats: Record<string, { count: number }>;
  latency: Histogram;
  requests: Histogram & { sent: number };
}

type Autocannon = (opts: Record<string, unknown>, cb: (err: Error | null, result: RawResult) => void) => { stop(): void };

const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

/** Runs autocannon once; rejects if it does not finish within the duration plus `graceSec`. */
export function cannon(o: CannonOptions, graceSec = 30): Promise<CannonSummary> {
  return new Promise<CannonSummary>((resolve, reject) => {
    let instance: { stop(): void } | null = null;
    const guard = setTimeout(() => {
      instance?.stop();
      reject(new Error(`autocannon did not finish within ${o.durationSec + graceSec} s`));
    }, (o.durationSec + graceSec) * 1000);
    instance = autocannon(
      {
        url: o.url,
        connections: o.connections,
        pipelining: o.pipelining,
        duration: o.durationSec,
        timeout: o.timeoutSec ?? 10,
        ...(o.overallRate !== undefined ? { overallRate: o.overallRate } : {}),
        requests: o.requests.map((r) => ({ method: r.method, path: r.path, headers: r.headers, ...(r.body !== undefined ? { body: r.body } : {}) })),
      },
      (err, r) => {
        clearTimeout(guard);
        if (err) return reject(err);
        const statusCodes: Record<string, number> = {};
        for (const [code, s] of Object.entries(r.statusCodeStats ?? {})) statusCodes[code] = s.count;
        resolve({
          reqPerSec: r.requests.average,
          reqPerSecOverall: r.duration > 0 ? r.requests.total / r.duration : 0,
          completed: r.requests.total,
          p50Ms: r.latency.p50,
          p99Ms: r.latency.p99,
          maxMs: r.latency.max,
          non2xx: r.non2xx,
          errors: r.errors,
          timeouts: r.timeouts,
          statusCodes,
          durationSec: r.duration,
        });
      },
    );
  });
}
