/**
 * The gateway's Prometheus metrics, in a registry of its own (like the broker's): a gateway and
 * brokers in one process (tests, `edgeq dev` variants) must not collide in prom-client's global
 * registry, and the gateway's produce series are named `edgeq_gateway_*` so a scrape job taking
 * both never sees one name twice.
 *
 * Label cardinality is bounded: `route` is the Hono route pattern (e.g.
 * `/v1/topics/:name/records`), never the raw path, so topic names and member ids do not become
 * series; unmatched paths share `route="unmatched"`. `method` is the request's method among the few
 * HTTP defines (others share `OTHER`), `status` a 3-digit code, `acks` one of 3 values.
 */
import type { IntervalHistogram } from 'node:perf_hooks';
import { registerEventLoopDelay, registerProcessMetrics } from '../metrics/index.ts';
import type { MiddlewareHandler } from 'hono';
import { routePath } from 'hono/route';
import { Counter, Histogram, Registry } from 'prom-client';

/** How the produce asked for durability, as a label. */
export type GatewayAcksLabel = '0' | '1' | 'all';

/** The route label of requests no route matched. */
export const UNMATCHED_ROUTE = 'unmatched';

const SECONDS_PER_MS = 1 / 1000;
/** Methods kept as label values; anything else is `OTHER` (a client may send any token). */
const KNOWN_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
/** Request durations, in seconds: a cached answer (~0.1 ms) up to a full long poll (30 s). */
const HTTP_DURATION_BUCKETS_S = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 30];
/** Produce latency through the gateway's producer (batching linger + broker round trip + replication). */
const PRODUCE_LATENCY_BUCKETS_S = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10];

/** Options of the gateway metrics. */
export interface GatewayMetricsOptions {
  /** Prometheus default process/Node.js metrics; on by default. */
  processMetrics?: boolean;
}

/** One gateway's metrics. */
export class GatewayMetrics {
  /** The registry to scrape. */
  readonly registry = new Registry();
  private readonly requests: Counter<'route' | 'method' | 'status'>;
  private readonly duration: Histogram<'route' | 'method'>;
  private readonly produceRecords: Counter<'acks'>;
  private readonly produceBytes: Counter<'acks'>;
  private readonly produceLatency: Histogram<'acks'>;
  private readonly eventLoop: IntervalHistogram;
  /** The produce counters' sums, readable without prom-client's async collection. */
  private readonly ingress = { records: 0, bytes: 0 };

  constructor(options: GatewayMetricsOptions = {}) {
    const registers = [this.registry];
    this.requests = new Counter({ name: 'edgeq_http_requests_total', help: 'HTTP requests answered, by route pattern, method and status.', labelNames: ['route', 'method', 'status'], registers });
    this.duration = new Histogram({
      name: 'edgeq_http_request_duration_seconds',
      help: 'Time to the response headers, by route pattern and method (a stream counts until it starts).',
      labelNames: ['route', 'method'],
      buckets: HTTP_DURATION_BUCKETS_S,
      registers,
    });
    this.produceRecords = new Counter({ name: 'edgeq_gateway_produce_records_total', help: 'Records produced through the gateway and acknowledged as asked, by acks.', labelNames: ['acks'], registers });
    this.produceBytes = new Counter({ name: 'edgeq_gateway_produce_bytes_total', help: 'Record bytes (key, value, headers) produced through the gateway, by acks.', labelNames: ['acks'], registers });
    this.produceLatency = new Histogram({
      name: 'edgeq_gateway_produce_latency_seconds',
      help: 'Time from handing a checked request to the producer to its acknowledgement (failures included), by acks.',
      labelNames: ['acks'],
      buckets: PRODUCE_LATENCY_BUCKETS_S,
      registers,
    });

    // Node's event-loop delay, read and reset at each scrape (as the broker's metric does).
    this.eventLoop = registerEventLoopDelay(registers);

    if (options.processMetrics !== false) registerProcessMetrics(this.registry);
  }

  /**
   * Middleware counting every request by route pattern. Registered first, so it also sees
   * answers made by later middleware (auth) and by the error handler.
   */
  middleware(middlewarePatterns: readonly string[]): MiddlewareHandler {
    const middlewares = new Set(middlewarePatterns);
    return async (c, next) => {
      const startedMs = performance.now();
      await next();
      // The last matched route is the handler's when one matched (handlers are registered after
      // the middlewares); a middleware pattern there means no route matched.
      const last = routePath(c, -1);
      const route = last === '' || middlewares.has(last) ? UNMATCHED_ROUTE : last;
      const method = KNOWN_METHODS.has(c.req.method) ? c.req.method : 'OTHER';
      this.requests.inc({ route, method, status: String(c.res.status) });
      this.duration.observe({ route, method }, (performance.now() - startedMs) * SECONDS_PER_MS);
    };
  }

  /** A produce finished after `durationMs`; `records`/`bytes` count only when it succeeded. */
  observeProduce(acks: GatewayAcksLabel, durationMs: number, ok: { records: number; bytes: number } | null): void {
    this.produceLatency.observe({ acks }, durationMs * SECONDS_PER_MS);
    if (!ok) return;
    this.produceRecords.inc({ acks }, ok.records);
    this.produceBytes.inc({ acks }, ok.bytes);
    this.ingress.records += ok.records;
    this.ingress.bytes += ok.bytes;
  }

  /** The exposition text of every metric. */
  scrape(): Promise<string> {
    return this.registry.metrics();
  }

  /** The exposition content type. */
  get contentType(): string {
    return this.registry.contentType;
  }

  /** Stops the event-loop monitor. */
  /** Records and bytes produced through this gateway since start (the region's ingress, for the mesh). */
  ingressTotals(): { records: number; bytes: number } {
    return { ...this.ingress };
  }

  close(): void {
    this.eventLoop.disable();
  }
}
