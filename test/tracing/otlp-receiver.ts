/**
 * A small OTLP/HTTP trace receiver on 127.0.0.1 for tests and the tracing benchmark: it takes the
 * exporter's POST /v1/traces (JSON, as @opentelemetry/exporter-trace-otlp-http sends it; gzip
 * accepted), answers 200, and keeps every span flattened, as the in-memory store the assertions
 * read. Bounded: past SPANS_MAX spans it keeps counting but stores no more.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { gunzipSync } from 'node:zlib';

/** Spans kept; a test that needs more is doing something else. */
export const SPANS_MAX = 100_000;
/** Largest request body read (the exporter sends at most 512 spans per request). */
const BODY_BYTES_MAX = 32 * 1024 * 1024;

type AttrValue = string | number | boolean | null;

/** One received span, flattened. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  startMs: number;
  endMs: number;
  attributes: Record<string, AttrValue>;
  links: { traceId: string; spanId: string }[];
  /** The resource's attributes (service.name, edgeq.region, …). */
  resource: Record<string, AttrValue>;
  status: { code?: number; message?: string };
}

export const OTLP_KIND = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 } as const;

/** OTLP JSON ids are hex in the JS exporter; base64 (the protobuf JSON mapping) is accepted too. */
function hexId(v: unknown): string {
  if (typeof v !== 'string' || v === '') return '';
  if (/^[0-9a-f]+$/i.test(v) && (v.length === 32 || v.length === 16)) return v.toLowerCase();
  return Buffer.from(v, 'base64').toString('hex');
}

function value(v: any): AttrValue {
  if (!v || typeof v !== 'object') return null;
  if ('stringValue' in v) return v.stringValue;
  if ('boolValue' in v) return v.boolValue;
  if ('intValue' in v) return Number(v.intValue);
  if ('doubleValue' in v) return Number(v.doubleValue);
  return JSON.stringify(v);
}

function attrs(list: any): Record<string, AttrValue> {
  const out: Record<string, AttrValue> = {};
  for (const kv of Array.isArray(list) ? list : []) out[kv.key] = value(kv.value);
  return out;
}

function nanosToMs(v: unknown): number {
  if (typeof v === 'string') return Number(BigInt(v) / 1000n) / 1000;
  if (typeof v === 'number') return v / 1e6;
  if (v && typeof v === 'object' && 'low' in v && 'high' in v) {
    const { low, high } = v as { low: number; high: number };
    return Number((BigInt(high >>> 0) << 32n) | BigInt(low >>> 0)) / 1e6;
  }
  return 0;
}

/** Flattens one ExportTraceServiceRequest (JSON). */
export function flattenOtlp(doc: any): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rs of doc?.resourceSpans ?? []) {
    const resource = attrs(rs.resource?.attributes);
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        out.push({
          traceId: hexId(s.traceId),
          spanId: hexId(s.spanId),
          parentSpanId: hexId(s.parentSpanId),
          name: s.name,
          kind: s.kind ?? 0,
          startMs: nanosToMs(s.startTimeUnixNano),
          endMs: nanosToMs(s.endTimeUnixNano),
          attributes: attrs(s.attributes),
          links: (s.links ?? []).map((l: any) => ({ traceId: hexId(l.traceId), spanId: hexId(l.spanId) })),
          resource,
          status: s.status ?? {},
        });
      }
    }
  }
  return out;
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let n = 0;
    req.on('data', (c: Buffer) => {
      n += c.length;
      if (n > BODY_BYTES_MAX) {
        req.destroy();
        reject(new Error('body too large'));
      } else parts.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(parts)));
    req.on('error', reject);
  });
}

export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  /** Spans received, stored or not. */
  received = 0;
  requests = 0;
  /** Requests that were not a JSON export (counted; a test can assert none). */
  rejected = 0;
  /** Time spent handling requests (read, decode, store): what the receiver cost its process. */
  handlerMs = 0;
  private constructor(
    private readonly server: Server,
    /** The base URL to give as OTEL_EXPORTER_OTLP_ENDPOINT / --otlp-endpoint. */
    readonly url: string,
  ) {}

  /**
   * Starts on 127.0.0.1 (a free port). `store: false` only counts spans (one scan of the body for
   * `"spanId"`): a load generator in the same process then loses almost nothing to it.
   */
  static async start(o: { store?: boolean } = {}): Promise<OtlpReceiver> {
    let self: OtlpReceiver | null = null;
    const store = o.store ?? true;
    const server = createServer((req, res) => {
      void (async () => {
        try {
          if (req.method !== 'POST' || req.url !== '/v1/traces') throw new Error(`unexpected ${req.method} ${req.url}`);
          let body = await readBody(req);
          const t0 = performance.now();
          if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
          self!.requests++;
          if (store) {
            const spans = flattenOtlp(JSON.parse(body.toString('utf8')));
            self!.received += spans.length;
            for (const s of spans) if (self!.spans.length < SPANS_MAX) self!.spans.push(s);
          } else {
            // One "spanId" key per span ("parentSpanId" does not match); a link has one too, so
            // spans with links are over-counted (the benchmark's spans have none).
            let n = 0;
            for (let i = body.indexOf('"spanId"'); i >= 0; i = body.indexOf('"spanId"', i + 8)) n++;
            self!.received += n;
          }
          self!.handlerMs += performance.now() - t0;
          res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
        } catch {
          self!.rejected++;
          res.writeHead(400).end();
        }
      })();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    self = new OtlpReceiver(server, `http://127.0.0.1:${port}`);
    return self;
  }

  /** Spans of one trace. */
  trace(traceId: string): ReceivedSpan[] {
    return this.spans.filter((s) => s.traceId === traceId);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
