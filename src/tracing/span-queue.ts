/**
 * Finished spans on their way to the exporter: a bounded queue, exported in batches every
 * `delayMs` (or at once when a batch is full), one export at a time, as the SDK's
 * BatchSpanProcessor does, but holding plain `SpanRecord`s that the hooks fill in one object
 * literal each. They become the SDK's `ReadableSpan` shape only when exported, in one loop per
 * batch.
 *
 * Why not the SDK's Tracer, Span and BatchSpanProcessor: at 1% sampling the span path runs a few
 * times a second per process, between thousands of requests of other work, and each span then
 * paid for a cold walk through the SDK's context, sampler, span, attribute and processor code.
 * Timed inside a loaded deployment (wall time): ~100 µs to start a gateway's send span and ~40
 * µs to end it, ~130 µs for a broker's spans of one traced batch; at a fixed 3,000 produces/s, 1%
 * sampling cost +17.6 µs of CPU per produce over gateway and brokers, ~1.8 ms per sampled one,
 * where the same spans back to back cost tens of µs. A span here is one object literal and an
 * array push; what is left of the SDK is its exporter (the OTLP/HTTP encoding, its retries and
 * timeouts) and its types. README, "Tracing's cost", has the figures before and after.
 */
import type { Attributes, HrTime, Link, SpanContext, SpanKind, SpanStatus } from '@opentelemetry/api';
import type { Resource } from '@opentelemetry/resources';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';

/** A finished span as a hook makes it: plain data, times in ms since the epoch (sub-ms precision). */
export interface SpanRecord {
  name: string;
  kind: SpanKind;
  /** Its own context: trace id (the parent's, or new), a new span id, sampled. */
  context: SpanContext;
  /** The span it is a child of; null for a root span. */
  parent: SpanContext | null;
  startMs: number;
  endMs: number;
  attributes: Attributes;
  links: Link[];
  /** {code: 0} (unset) or {code: 2, message} (error). */
  status: SpanStatus;
}

/** The SDK's InstrumentationScope (from @opentelemetry/core; only its shape is needed). */
export interface SpanScope {
  name: string;
  version?: string;
}

export interface SpanQueueOptions {
  /** Spans held; past it new ones are dropped (counted), never queued without bound. */
  queueMax: number;
  /** Spans per export call. */
  batchMax: number;
  /** Delay from the first queued span to the export of the queue. */
  delayMs: number;
  /** Bound on one export call; past it the batch counts as failed and the next may go. */
  timeoutMs: number;
  resource: Resource;
  scope: SpanScope;
}

/** Export result code SUCCESS (@opentelemetry/core's ExportResultCode, as a number). */
const EXPORT_SUCCESS = 0;

const NANOS_PER_MS = 1e6;

/** ms since the epoch (fractional) as the API's HrTime: [seconds, nanoseconds]. */
export function hrTime(ms: number): HrTime {
  const seconds = Math.floor(ms / 1000);
  const nanos = Math.round((ms - seconds * 1000) * NANOS_PER_MS);
  return nanos >= 1e9 ? [seconds + 1, nanos - 1e9] : [seconds, nanos];
}

/** A SpanRecord as the exporter reads a span (the SDK's ReadableSpan). */
export function toReadableSpan(r: SpanRecord, resource: Resource, scope: SpanScope): ReadableSpan {
  const context = r.context;
  const span = {
    name: r.name,
    kind: r.kind,
    spanContext: () => context,
    startTime: hrTime(r.startMs),
    endTime: hrTime(r.endMs),
    status: r.status,
    attributes: r.attributes,
    links: r.links,
    events: [],
    duration: hrTime(Math.max(0, r.endMs - r.startMs)),
    ended: true,
    resource,
    instrumentationScope: scope,
    droppedAttributesCount: 0,
    droppedEventsCount: 0,
    droppedLinksCount: 0,
  };
  return r.parent === null ? span : { ...span, parentSpanContext: r.parent };
}

export class SpanQueue {
  private queue: SpanRecord[] = [];
  private timer: NodeJS.Timeout | null = null;
  /** The export running now (one at a time). */
  private running: Promise<void> | null = null;
  private stopped = false;
  /** Spans refused because the queue was full. */
  dropped = 0;
  /** Spans handed to the exporter and confirmed. */
  exported = 0;
  /** Spans of export calls that failed or timed out. */
  failed = 0;

  constructor(
    private readonly exporter: SpanExporter,
    private readonly o: SpanQueueOptions,
  ) {}

  /** Spans waiting for export. */
  get size(): number {
    return this.queue.length;
  }

  /** Queues a finished span (dropped when the queue is full or the queue was shut down). */
  add(r: SpanRecord): void {
    if (this.stopped) return;
    if (this.queue.length >= this.o.queueMax) {
      this.dropped++;
      return;
    }
    this.queue.push(r);
    if (this.queue.length >= this.o.batchMax) this.schedule(0);
    else if (this.timer === null) this.schedule(this.o.delayMs);
  }

  /** Exports everything queued now (and waits for an export already running). */
  async flush(): Promise<void> {
    this.cancelTimer();
    await this.drain();
  }

  /** Exports what is queued, refuses new spans and shuts the exporter down. */
  async shutdown(): Promise<void> {
    this.stopped = true;
    await this.flush();
    await this.exporter.shutdown();
  }

  private cancelTimer(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  private schedule(ms: number): void {
    if (this.timer !== null) {
      if (ms > 0) return; // the queue is already due
      this.cancelTimer();
    }
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.drain();
    }, ms);
    // Spans never keep a process alive: a clean stop flushes them (shutdown).
    this.timer.unref();
  }

  /** Exports the queue in batches, after the export already running. */
  private async drain(): Promise<void> {
    while (this.running !== null) await this.running;
    if (this.queue.length === 0) return;
    const run = this.exportQueued();
    this.running = run;
    try {
      await run;
    } finally {
      this.running = null;
    }
  }

  private async exportQueued(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.o.batchMax);
      const spans = batch.map((r) => toReadableSpan(r, this.o.resource, this.o.scope));
      if (await this.exportOne(spans)) this.exported += spans.length;
      else this.failed += spans.length;
    }
  }

  /** One export call, bounded by timeoutMs; true when the exporter confirmed it. */
  private exportOne(spans: ReadableSpan[]): Promise<boolean> {
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), this.o.timeoutMs);
      timer.unref();
      try {
        this.exporter.export(spans, (result) => {
          clearTimeout(timer);
          resolve(result.code === EXPORT_SUCCESS);
        });
      } catch {
        clearTimeout(timer);
        resolve(false);
      }
    });
  }
}
