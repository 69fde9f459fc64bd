/**
 * The process's installed tracer, read by every hook. This module loads nothing: while tracing is
 * off no OpenTelemetry code is even imported (the SDK costs ~80 ms of start-up per process).
 */
import { EdgeqError } from '../core/errors.ts';
import type { SpanRecord } from './span-queue.ts';

/** Who the spans of this process are from. */
export interface TracingIdentity {
  /** `edgeq-gateway`, `edgeq-broker`. */
  service: string;
  region?: string;
  /** The gateway's mesh member id, the broker's id. */
  instance?: string;
}

/** An installed tracer. */
export interface ActiveTracer {
  readonly identity: TracingIdentity;
  /**
   * Share of new traces recorded (decided in `traceSend`, before any SDK call). Writable: an
   * operator may change it at run time (setSampleRatio, the gateway's `PUT /v1/tracing`).
   */
  sampleRatio: number;
  /** Where spans go (OTLP/HTTP), null for an injected exporter (tests). */
  readonly url: string | null;
  /** Delay between two exports of the span queue. */
  readonly exportDelayMs: number;
  /** How long the JIT warm-up at install took (ms); null when it did not run (warm-up.ts). */
  readonly warmUpMs: number | null;
  /** Queues a finished span for export (span-queue.ts; dropped, and counted, when the queue is full). */
  record(span: SpanRecord): void;
  /** Exports what is queued now. */
  flush(): Promise<void>;
  /** Exports what is queued and stops; the tracer is uninstalled. */
  shutdown(): Promise<void>;
}

let active: ActiveTracer | null = null;

/** The installed tracer, or null when tracing is off (the hooks' first line). */
export function activeTracer(): ActiveTracer | null {
  return active;
}

/** Installs `t` (null: uninstalls); returns the one it replaced. */
export function setActiveTracer(t: ActiveTracer | null): ActiveTracer | null {
  const previous = active;
  active = t;
  return previous;
}

/**
 * Sets the share of new traces the installed tracer records, from now on (the produces already
 * sampled keep their decision). INVALID_ARGUMENT outside 0..1; NOT_FOUND when tracing is off
 * (nothing to sample: the OTLP endpoint is a start-up setting). Nothing changes on a refusal.
 */
export function setSampleRatio(ratio: unknown): ActiveTracer {
  if (typeof ratio !== 'number' || !Number.isFinite(ratio) || ratio < 0 || ratio > 1) {
    throw new EdgeqError('INVALID_ARGUMENT', `sampleRatio must be a number within 0..1, got ${JSON.stringify(ratio) ?? String(ratio)}`, { details: { field: 'sampleRatio' } });
  }
  if (active === null) throw new EdgeqError('NOT_FOUND', 'tracing is off in this process (no OTLP endpoint was configured at start: --otlp-endpoint)');
  active.sampleRatio = ratio;
  return active;
}
