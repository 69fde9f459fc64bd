/**
 * One connection to one broker, shared by everything that talks to brokers (the client library
 * and the broker's replica fetcher): framing, correlation ids, API-version negotiation and
 * request timeouts. On connect it sends ApiVersions (version 1, as every peer speaks it) and
 * keeps, per API, the highest version both sides speak. Requests are pipelined: up to
 * `inflightRequestsMax` are on the wire at once, each tagged with a correlation id, and further
 * callers wait (FIFO, so requests leave in call order) for a slot.
 *
 * The byte stream comes from `socketFactory` (TCP by default), so tests can hand it a fake.
 *
 * Throttling (Kafka's KIP-219, the client's side): a response carrying `throttleMs` > 0 (a
 * Produce over the client's quota, a Fetch on a throttled connection) means the broker will not
 * read this connection for that long. Further requests are held here until then instead of
 * being written into a socket nobody reads: one timer per connection, and a request whose
 * timeout ends inside the throttle fails at once with THROTTLED (retriable) instead of waiting.
 *
 * Failure model: a request that gets no answer within its timeout fails with REQUEST_TIMED_OUT
 * (its late answer is dropped by correlation id); when the socket closes or a frame is corrupt,
 * every pending and waiting request fails with CONNECTION_CLOSED (retriable) and the connection
 * is dead for good: the caller opens a new one.
 */
import { createConnection, isIP } from 'node:net';
import type { Duplex } from 'node:stream';
import { connect as tlsConnect, type ConnectionOptions as TlsConnectionOptions } from 'node:tls';
import { EdgeqError, silentLogger, systemClock, toEdgeqError, type Clock, type Logger, type TimerHandle } from '../core/index.ts';
import { ApiKey, negotiateVersions, type ApiName, type RequestOf, type ResponseOf } from './api.ts';
import { writeCoalesced } from './coalesced-write.ts';
import { decodeResponse, encodeRequest, throwIfError } from './codec.ts';
import { FLAG_RESPONSE, FrameDecoder, type Frame } from './frame.ts';
import { AUTH_MECHANISM_API_KEY } from './messages.ts';

/**
 * The byte stream of a connection: node's `net.Socket`, or a test's fake. It emits 'connect' once
 * it can carry bytes, then 'data', 'error' and 'close' as a socket does.
 */
export type Transport = Duplex & { setNoDelay?(noDelay?: boolean): unknown };

/** Opens the byte stream to a broker; the default opens a TCP socket. */
export type SocketFactory = (address: BrokerAddress) => Transport;

/** The default `SocketFactory`: TCP. */
export const tcpSocketFactory: SocketFactory = (address) => createConnection({ host: address.host, port: address.port });

/**
 * Where a TLS connection gets its options (the trusted CA, this side's certificate for mTLS, the
 * protocol floor), read at each new connection so a reloaded certificate is used from then on.
 * `TlsMaterial` (src/tls) is one.
 */
export interface TlsClientSource {
  clientOptions(): TlsConnectionOptions;
}

/** A `SocketFactory` opening TLS connections with the options `source` has now. */
export function tlsSocketFactory(source: TlsClientSource): SocketFactory {
  return (address) =>
    tlsConnect({
      host: address.host,
      port: address.port,
      ...source.clientOptions(),
      // SNI only for names (RFC 6066 forbids IP literals); an IP is checked against the IP SANs.
      ...(isIP(address.host) === 0 ? { servername: address.host } : {}),
    });
}

/** Options of one connection. */
export interface ConnectionOptions {
  clientId?: string;
  /** Connect over TLS with these options (absent: plaintext TCP); ignored when `socketFactory` is given. */
  tls?: TlsClientSource;
  /**
   * An API key sent in an Authenticate request right after ApiVersions (a broker with auth on
   * refuses other requests until a connection authenticated). A connection with a client
   * certificate the broker maps to a principal needs none.
   */
  apiKey?: string;
  /** Bound on TCP connect plus the ApiVersions exchange. */
  connectTimeoutMs?: number;
  /** Default bound on one request, from the call until its answer. */
  requestTimeoutMs?: number;
  /** Requests on the wire at once; later callers wait for a slot. */
  inflightRequestsMax?: number;
  /** Callers allowed to wait for a slot; one more fails with QUEUE_FULL. */
  waitingRequestsMax?: number;
  /** Largest frame accepted from the broker. */
  frameBytesMax?: number;
  /** Opens the byte stream (default TCP); tests inject fakes here. */
  socketFactory?: SocketFactory;
  /** Aborts a connect still under way (CONNECTION_CLOSED), e.g. when its owner closes. */
  signal?: AbortSignal;
  clock?: Clock;
  logger?: Logger;
}

/** Defaults of `ConnectionOptions`. */
export const CONNECTION_DEFAULTS = {
  clientId: 'edgeq-client',
  connectTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  inflightRequestsMax: 32,
  waitingRequestsMax: 4_096,
  frameBytesMax: 64 * 1024 * 1024,
} as const;

/** Options of one request. */
export interface RequestOptions {
  /** Overrides the connection's `requestTimeoutMs` (long polls add their wait to it). */
  timeoutMs?: number;
}

interface Pending {
  name: ApiName;
  resolve: (frame: Frame) => void;
  reject: (err: EdgeqError) => void;
  timer: TimerHandle;
}

interface Waiter {
  start: () => void;
  reject: (err: EdgeqError) => void;
}

/** A host and port. */
export interface BrokerAddress {
  host: string;
  port: number;
}

/** Parses `host:port` (IPv6 as `[::1]:9092`). */
export function parseAddress(text: string): BrokerAddress {
  const m = /^\[?([^\]]+?)\]?:(\d+)$/.exec(text.trim());
  const port = m ? Number(m[2]) : NaN;
  if (!m || !Number.isInteger(port) || port <= 0 || port > 65_535) {
    throw new EdgeqError('INVALID_CONFIG', `broker address "${text}" is not host:port`);
  }
  return { host: m[1]!, port };
}

/** A live connection to a broker; make one with `Connection.connect`. */
export class Connection {
  readonly address: BrokerAddress;
  /** The broker's id as it said in ApiVersions. */
  brokerId = -1;
  clusterId = '';
  /** The tenant the broker authenticated this connection as ('' without an API key). */
  tenant = '';
  private readonly socket: Transport;
  private readonly decoder: FrameDecoder;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly requestTimeoutMs: number;
  private readonly inflightRequestsMax: number;
  private readonly waitingRequestsMax: number;
  private readonly pending = new Map<number, Pending>();
  private readonly waiting: Waiter[] = [];
  private readonly closeListeners: ((err: EdgeqError) => void)[] = [];
  private inflight = 0;
  private nextCorrelationId = 1;
  private versions = new Map<number, number>();
  private closedWith: EdgeqError | null = null;
  /** Until when (monotonic ms) the broker throttles this connection: requests are held until then. */
  private throttledUntilMs = 0;
  /** The one timer of a throttle (shared by every held request), and how to end it early on close. */
  private throttleGate: { promise: Promise<void>; release: () => void; timer: TimerHandle } | null = null;

  private constructor(socket: Transport, address: BrokerAddress, options: ConnectionOptions) {
    this.socket = socket;
    this.address = address;
    this.clock = options.clock ?? systemClock;
    this.logger = (options.logger ?? silentLogger).child({ component: 'connection', broker: `${address.host}:${address.port}` });
    this.requestTimeoutMs = options.requestTimeoutMs ?? CONNECTION_DEFAULTS.requestTimeoutMs;
    this.inflightRequestsMax = options.inflightRequestsMax ?? CONNECTION_DEFAULTS.inflightRequestsMax;
    this.waitingRequestsMax = options.waitingRequestsMax ?? CONNECTION_DEFAULTS.waitingRequestsMax;
    this.decoder = new FrameDecoder({ frameBytesMax: options.frameBytesMax ?? CONNECTION_DEFAULTS.frameBytesMax });
    socket.setNoDelay?.(true);
    socket.on('data', (data: Buffer) => this.onData(data));
    socket.on('error', (err) => this.fail(new EdgeqError('CONNECTION_CLOSED', `connection to ${this.label} failed: ${err.message}`, { cause: err })));
    socket.on('close', () => this.fail(new EdgeqError('CONNECTION_CLOSED', `connection to ${this.label} closed`)));
  }

  /** Opens a connection and negotiates API versions; fails with CONNECTION_CLOSED or REQUEST_TIMED_OUT. */
  static async connect(address: BrokerAddress, options: ConnectionOptions = {}): Promise<Connection> {
    const clock = options.clock ?? systemClock;
    const timeoutMs = options.connectTimeoutMs ?? CONNECTION_DEFAULTS.connectTimeoutMs;
    const label = `${address.host}:${address.port}`;
    const socketFactory = options.socketFactory ?? (options.tls ? tlsSocketFactory(options.tls) : tcpSocketFactory);
    const signal = options.signal;
    const aborted = () => new EdgeqError('CONNECTION_CLOSED', `connecting to ${label} was aborted`, { details: { broker: label } });
    if (signal?.aborted) throw aborted();
    const socket = await new Promise<Transport>((resolve, reject) => {
      const s = socketFactory(address);
      const onAbort = () => {
        timer.cancel();
        s.destroy();
        reject(aborted());
      };
      const timer = clock.setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        s.destroy();
        reject(new EdgeqError('REQUEST_TIMED_OUT', `connecting to ${label} took over ${timeoutMs} ms`));
      }, timeoutMs);
      signal?.addEventListener('abort', onAbort, { once: true });
      // A TLS socket is ready once its handshake is done ('connect' is only the TCP part).
      s.once((s as { encrypted?: boolean }).encrypted === true ? 'secureConnect' : 'connect', () => {
        timer.cancel();
        signal?.removeEventListener('abort', onAbort);
        s.removeAllListeners('error');
        resolve(s);
      });
      s.once('error', (err) => {
        timer.cancel();
        signal?.removeEventListener('abort', onAbort);
        reject(new EdgeqError('CONNECTION_CLOSED', `cannot connect to ${label}: ${err.message}`, { cause: err, details: { broker: label } }));
      });
    });
    const conn = new Connection(socket, address, options);
    // Aborted during the handshake: the pending ApiVersions fails with CONNECTION_CLOSED.
    const onAbort = () => conn.close();
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const res = await conn.send('ApiVersions', { clientId: options.clientId ?? CONNECTION_DEFAULTS.clientId, clientSoftware: 'edgeq-js' }, {
        timeoutMs,
        version: 1,
      });
      throwIfError(res.error);
      conn.versions = negotiateVersions(res.apis);
      conn.brokerId = res.brokerId;
      conn.clusterId = res.clusterId;
      if (options.apiKey !== undefined) {
        const auth = await conn.send('Authenticate', { mechanism: AUTH_MECHANISM_API_KEY, apiKey: options.apiKey }, { timeoutMs, version: conn.versionOf('Authenticate') });
        throwIfError(auth.error, { broker: label });
        conn.tenant = auth.tenant;
      }
    } catch (err) {
      conn.close();
      throw err;
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
    return conn;
  }

  private get label(): string {
    return `${this.address.host}:${this.address.port}`;
  }

  /** True once the connection failed or was closed; it never comes back. */
  get closed(): boolean {
    return this.closedWith !== null;
  }

  /** Requests sent and not yet answered. */
  get inflightCount(): number {
    return this.inflight;
  }

  /** Milliseconds the broker still throttles this connection (0: none): requests are held that long. */
  get throttledForMs(): number {
    return Math.max(0, this.throttledUntilMs - this.clock.monotonicMs());
  }

  /** Calls `fn` once when the connection dies, with the reason. */
  onClose(fn: (err: EdgeqError) => void): void {
    if (this.closedWith) fn(this.closedWith);
    else this.closeListeners.push(fn);
  }

  /** The negotiated version of an API, or UNSUPPORTED_VERSION when the broker lacks it. */
  versionOf(name: ApiName): number {
    const v = this.versions.get(ApiKey[name]);
    if (v === undefined) {
      throw new EdgeqError('UNSUPPORTED_VERSION', `broker ${this.label} does not speak ${name} in a version this client knows`, {
        details: { api: name, broker: this.label },
      });
    }
    return v;
  }

  /** Sends a request and resolves with its decoded response (the error of an ERROR frame is thrown). */
  async request<N extends ApiName>(name: N, body: RequestOf<N>, options: RequestOptions = {}): Promise<ResponseOf<N>> {
    return this.send(name, body, { timeoutMs: options.timeoutMs, version: this.versionOf(name) });
  }

  /**
   * Sends a request that gets no response frame (Produce with acks NONE); resolves once the bytes
   * were handed to the socket.
   */
  async requestNoResponse<N extends ApiName>(name: N, body: RequestOf<N>): Promise<void> {
    const version = this.versionOf(name);
    await this.holdWhileThrottled(name, this.clock.monotonicMs() + this.requestTimeoutMs);
    await this.acquireSlot(this.requestTimeoutMs);
    try {
      if (this.closedWith) throw this.closedWith;
      const frame = encodeRequest(name, version, this.takeCorrelationId(), body);
      await new Promise<void>((resolve, reject) => {
        writeCoalesced(this.socket, frame, (err) => (err ? reject(new EdgeqError('CONNECTION_CLOSED', err.message, { cause: err })) : resolve()));
      });
    } finally {
      this.releaseSlot();
    }
  }

  private async send<N extends ApiName>(
    name: N,
    body: RequestOf<N>,
    options: { timeoutMs: number | undefined; version: number },
  ): Promise<ResponseOf<N>> {
    const timeoutMs = options.timeoutMs ?? this.requestTimeoutMs;
    const started = this.clock.monotonicMs();
    await this.holdWhileThrottled(name, started + timeoutMs);
    await this.acquireSlot(Math.max(1, timeoutMs - (this.clock.monotonicMs() - started)));
    // The timeout covers the waits for the throttle and a slot too: a caller is promised an answer within timeoutMs.
    const remainingMs = Math.max(1, timeoutMs - (this.clock.monotonicMs() - started));
    let frame: Frame;
    try {
      frame = await new Promise<Frame>((resolve, reject) => {
        if (this.closedWith) {
          reject(this.closedWith);
          return;
        }
        const correlationId = this.takeCorrelationId();
        const timer = this.clock.setTimeout(() => {
          if (!this.pending.delete(correlationId)) return;
          reject(new EdgeqError('REQUEST_TIMED_OUT', `${name} to ${this.label} got no answer within ${timeoutMs} ms`, {
            details: { api: name, broker: this.label, timeoutMs },
          }));
        }, remainingMs);
        this.pending.set(correlationId, { name, resolve, reject, timer });
        writeCoalesced(this.socket, encodeRequest(name, options.version, correlationId, body));
      });
    } finally {
      this.releaseSlot();
    }
    const res = decodeResponse(name, frame);
    const throttleMs = (res as { throttleMs?: unknown }).throttleMs;
    if (typeof throttleMs === 'number' && throttleMs > 0) this.throttled(throttleMs);
    return res;
  }

  /** The broker said it throttles this connection for `ms` from now. */
  private throttled(ms: number): void {
    const until = this.clock.monotonicMs() + ms;
    if (until <= this.throttledUntilMs) return;
    this.throttledUntilMs = until;
    this.logger.debug({ throttleMs: ms }, 'broker throttles this connection; holding requests');
  }

  /**
   * Waits until the broker's throttle is over (KIP-219: it would not read the request anyway).
   * THROTTLED (retriable) at once when the throttle outlasts `deadlineMs`, the caller's timeout.
   */
  private async holdWhileThrottled(name: ApiName, deadlineMs: number): Promise<void> {
    for (;;) {
      if (this.closedWith) throw this.closedWith;
      const now = this.clock.monotonicMs();
      const waitMs = this.throttledUntilMs - now;
      if (waitMs <= 0) return;
      if (this.throttledUntilMs >= deadlineMs) {
        throw new EdgeqError('THROTTLED', `${name} to ${this.label}: the broker throttles this connection for ${Math.ceil(waitMs)} ms more, past the request's timeout`, {
          details: { api: name, broker: this.label, throttleMs: Math.ceil(waitMs) },
        });
      }
      // One timer for every held request; a throttle extended meanwhile takes another turn.
      if (!this.throttleGate) {
        let release!: () => void;
        const promise = new Promise<void>((r) => (release = r));
        const timer = this.clock.setTimeout(() => {
          this.throttleGate = null;
          release();
        }, waitMs);
        this.throttleGate = { promise, release, timer };
      }
      await this.throttleGate.promise;
    }
  }

  private takeCorrelationId(): number {
    const id = this.nextCorrelationId;
    // Correlation ids are int32 on the wire; wrap before overflow (ids are only matched among the
    // few requests in flight, so reuse after 2^31 is harmless).
    this.nextCorrelationId = id >= 0x7fffffff ? 1 : id + 1;
    return id;
  }

  private acquireSlot(timeoutMs: number): Promise<void> {
    if (this.closedWith) return Promise.reject(this.closedWith);
    if (this.inflight < this.inflightRequestsMax && this.waiting.length === 0) {
      this.inflight++;
      return Promise.resolve();
    }
    if (this.waiting.length >= this.waitingRequestsMax) {
      return Promise.reject(new EdgeqError('QUEUE_FULL', `${this.waiting.length} requests already wait for ${this.label}`));
    }
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        start: () => {
          timer.cancel();
          this.inflight++;
          resolve();
        },
        reject: (err) => {
          timer.cancel();
          reject(err);
        },
      };
      const timer = this.clock.setTimeout(() => {
        const i = this.waiting.indexOf(waiter);
        if (i < 0) return;
        this.waiting.splice(i, 1);
        reject(new EdgeqError('REQUEST_TIMED_OUT', `no request slot to ${this.label} freed within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiting.push(waiter);
    });
  }

  private releaseSlot(): void {
    this.inflight--;
    const next = this.waiting.shift();
    if (next) next.start();
  }

  private onData(data: Buffer): void {
    let frames: Frame[];
    try {
      frames = this.decoder.push(data);
    } catch (err) {
      // The stream cannot be resynchronised after a bad frame.
      this.fail(new EdgeqError('CONNECTION_CLOSED', `bad frame from ${this.label}: ${(err as Error).message}`, { cause: err }));
      return;
    }
    for (const frame of frames) {
      const p = this.pending.get(frame.correlationId);
      if (!p || (frame.flags & FLAG_RESPONSE) === 0) {
        this.logger.debug({ correlationId: frame.correlationId }, 'dropping a response nobody waits for (timed out)');
        continue;
      }
      this.pending.delete(frame.correlationId);
      p.timer.cancel();
      // The decoder's buffer is reused; the body must outlive this call.
      p.resolve({ ...frame, body: Buffer.from(frame.body) });
    }
  }

  private fail(err: EdgeqError): void {
    if (this.closedWith) return;
    this.closedWith = err;
    this.socket.destroy();
    // Held requests fail now (they find closedWith), not when the throttle would have ended.
    if (this.throttleGate) {
      this.throttleGate.timer.cancel();
      this.throttleGate.release();
      this.throttleGate = null;
    }
    for (const p of this.pending.values()) {
      p.timer.cancel();
      p.reject(err);
    }
    this.pending.clear();
    for (const w of this.waiting.splice(0)) w.reject(err);
    for (const fn of this.closeListeners.splice(0)) {
      try {
        fn(err);
      } catch (e) {
        this.logger.warn({ err: toEdgeqError(e) }, 'close listener threw');
      }
    }
  }

  /** Closes the connection; pending requests fail with CONNECTION_CLOSED. */
  close(): void {
    this.fail(new EdgeqError('CONNECTION_CLOSED', `connection to ${this.label} was closed by the client`));
  }
}
