/**
 * The process's installed tracer, read by every hook. This module loads nothing: while tracing is
 * off no OpenTelemetry code is even imported (the SDK costs ~80 ms of start-up per process).
 */
import type { Context, SpanContext, Tracer } from '@opentelemetry/api';

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
  readonly tracer: Tracer;
  readonly identity: TracingIdentity;
  /** Share of new traces recorded (decided in `traceSend`, before any SDK call). */
  readonly sampleRatio: number;
  /** The context to start a child of `sc` in (the root context for null). */
  parent(sc: SpanContext | null): Context;
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
