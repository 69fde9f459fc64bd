/**
 * Server-Sent Events reads: one partition from an offset, as long as the client listens. Each
 * stream holds its own consumer (assigned to the one partition, closed when the stream ends), so
 * the number of open streams is bounded and the one past the bound is refused with 429 before any
 * consumer is made.
 */
import type { Context } from 'hono';
import { streamSSE, type SSEStreamingApi } from 'hono/streaming';
import type { Consumer, EdgeqClient } from '../client/index.ts';
import { EdgeqError, orAborted } from '../core/index.ts';
import { toProblem } from './errors.ts';
import type { GatewayLimits } from './limits.ts';
import { toJsonRecord } from './records.ts';
import { traceDelivered } from '../tracing/index.ts';

/** Retry-After hint for a refused stream: streams last long, so a slot frees slowly. */
export const STREAM_RETRY_AFTER_MS = 5_000;

/** Counts open streams against `streamsMax`. */
export class StreamSlots {
  private open = 0;
  /** Ends each open stream: the HTTP server's close waits for open connections, streams never end on their own. */
  private readonly enders = new Set<() => void>();
  /** `what` and `bound` name the streams and their limit in the refusal. */
  constructor(
    private readonly max: number,
    private readonly what = 'streams',
    private readonly bound = 'the most the gateway holds (streamsMax)',
  ) {}

  /** Registers how to end one stream; returns the unregistering function. */
  track(end: () => void): () => void {
    this.enders.add(end);
    return () => this.enders.delete(end);
  }

  /** Ends every open stream (at shutdown). */
  endAll(): void {
    for (const end of [...this.enders]) end();
  }

  /** Takes a slot or throws THROTTLED; the caller must `release()` exactly once. */
  acquire(): void {
    if (this.open >= this.max) {
      throw new EdgeqError('THROTTLED', `${this.open} ${this.what} are open, ${this.bound}`, { details: { retryAfterMs: STREAM_RETRY_AFTER_MS } });
    }
    this.open++;
  }

  release(): void {
    this.open--;
  }

  get count(): number {
    return this.open;
  }
}

/** What one stream reads. */
export interface StreamRequest {
  topic: string;
  partition: number;
  offset: number;
  /** The gateway's region when the topic is global (records then carry their origin), else null. */
  ownRegion?: string | null;
}

/**
 * Answers `c` with an SSE stream of `req`'s partition. The slot must already be taken: it is
 * released, and the consumer closed, when the client goes away or the stream fails.
 */
export function streamPartition(c: Context, client: EdgeqClient, limits: GatewayLimits, slots: StreamSlots, req: StreamRequest): Response {
  let consumer: Consumer | null = null;
  const cleanUp = (): void => {
    const c0 = consumer;
    consumer = null;
    void c0?.close().catch(() => undefined);
  };
  let released = false;
  let untrack = (): void => undefined;
  const release = (): void => {
    if (released) return;
    released = true;
    untrack();
    slots.release();
    cleanUp();
  };
  try {
    return streamSSE(
      c,
      async (stream: SSEStreamingApi) => {
        // Either side may end it: the client cancelling the body, or the request's signal
        // (node-server aborts it on disconnect). A signal, not a promise raced on every poll: see
        // orAborted.
        const gone = new AbortController();
        const end = () => gone.abort();
        stream.onAbort(end);
        untrack = slots.track(() => {
          if (!stream.aborted) stream.abort();
          end();
        });
        c.req.raw.signal.addEventListener('abort', () => {
          if (!stream.aborted) stream.abort();
          end();
        });
        try {
          consumer = client.consumer({ maxWaitMs: limits.streamHeartbeatMs, autoCommit: false, pollRecordsMax: limits.recordsMax });
          consumer.assign([{ topic: req.topic, partition: req.partition }]);
          consumer.seek(req.topic, req.partition, req.offset);
          while (!stream.aborted && !stream.closed && consumer) {
            const polled = await orAborted(consumer.poll({ timeoutMs: limits.streamHeartbeatMs }), gone.signal);
            if (polled === null || stream.aborted) break;
            if (polled.length === 0) {
              // A comment line: ignored by EventSource, but bytes on the wire.
              await stream.write(': heartbeat\n\n');
              continue;
            }
            traceDelivered(req.topic, req.partition, polled);
            for (const r of polled) {
              if (stream.aborted) break;
              await stream.writeSSE({ id: String(r.offset), data: JSON.stringify(toJsonRecord(r, 'utf8', req.ownRegion ?? null)) });
            }
          }
        } catch (err) {
          // The answer is already a 200: a failure reaches the client as an `error` event carrying the problem.
          if (!stream.aborted) await stream.writeSSE({ event: 'error', data: JSON.stringify(toProblem(err)) });
        } finally {
          release();
        }
      },
    );
  } catch (err) {
    release();
    throw err;
  }
}
