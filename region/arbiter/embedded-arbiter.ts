/**
 * EmbeddedArbiter: the Arbiter interface over a connection to an `edgeq arbiter` process.
 *
 * Every request has an id and a deadline; a request that gets no answer in time, or whose
 * connection drops after it was sent, fails with ARBITER_UNAVAILABLE (it may or may not have been
 * applied: the caller re-reads, as with etcd). Requests made while disconnected wait for the
 * reconnect within their deadline. The connection is re-made with capped exponential backoff,
 * and each watch is re-established from the last revision it delivered, skipping events it
 * already delivered, so a reconnect neither loses nor repeats an event. Leases are renewed only
 * when the caller calls keepAliveOnce: liveness is the caller's decision.
 */
import { connect, type Socket } from 'node:net';
import { EdgeqError, silentLogger, systemClock, type Clock, type Logger, type TimerHandle } from '../../src/core/index.ts';
import type { Arbiter, CasOptions, CasResult, KeyValue, Lease, TxnRequest, TxnResult, Watch, WatchEvent } from './arbiter.ts';
import { LineDecoder } from './line-decoder.ts';
import { checkCas, checkKey, checkPrefix, checkPut, checkRevision, checkTtlMs, checkTxn, isCompactedError } from './validation.ts';
import { errorFromWireMessage, eventFromWire, kvFromWire, RESPONSE_BYTES_MAX, txnOpToWire, type WireError, type WireEvent, type WireKeyValue } from './wire.ts';

/** Deadline of one request: a few seconds, well under a broker lease (typically 10 s). */
export const REQUEST_TIMEOUT_MS_DEFAULT = 5_000;
/** Requests waiting for an answer; more fail at once rather than queue without bound. */
export const PENDING_REQUESTS_MAX_DEFAULT = 1024;
/** Watches of one client (the server allows 64 per connection). */
export const CLIENT_WATCHES_MAX_DEFAULT = 64;
export const RECONNECT_BACKOFF_MS_MIN_DEFAULT = 50;
export const RECONNECT_BACKOFF_MS_MAX_DEFAULT = 2_000;

/** Options of an EmbeddedArbiter. */
export interface EmbeddedArbiterOptions {
  port: number;
  /** Defaults to 127.0.0.1. */
  host?: string;
  clock?: Clock;
  logger?: Logger;
  requestTimeoutMs?: number;
  pendingRequestsMax?: number;
  watchesMax?: number;
  reconnectBackoffMsMin?: number;
  reconnectBackoffMsMax?: number;
}

interface Pending {
  line: string;
  sent: boolean;
  timer: TimerHandle;
  resolve: (result: unknown) => void;
  reject: (err: Error) => void;
}

interface ClientWatch {
  id: number;
  prefix: string;
  onEvent: (e: WatchEvent) => void;
  onError: ((err: Error) => void) | undefined;
  /** Highest revision delivered (or the start revision). */
  lastRevision: number;
  /** Keys already delivered at lastRevision: one revision can carry several events. */
  keysAtLast: Set<string>;
  /** Whether the server currently runs this watch on the live connection. */
  active: boolean;
  /** A watch request for it is in flight. */
  establishing: boolean;
  closed: boolean;
}

/** A client of the `edgeq arbiter` process. */
export class EmbeddedArbiter implements Arbiter {
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly host: string;
  private readonly requestTimeoutMs: number;
  private readonly pendingRequestsMax: number;
  private readonly watchesMax: number;
  private readonly backoffMsMin: number;
  private readonly backoffMsMax: number;
  private socket: Socket | null = null;
  private connected = false;
  private backoffMs: number;
  private reconnectTimer: TimerHandle | null = null;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly watches = new Map<number, ClientWatch>();
  private closed = false;

  constructor(private readonly options: EmbeddedArbiterOptions) {
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? silentLogger;
    this.host = options.host ?? '127.0.0.1';
    this.requestTimeoutMs = options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS_DEFAULT;
    this.pendingRequestsMax = options.pendingRequestsMax ?? PENDING_REQUESTS_MAX_DEFAULT;
    this.watchesMax = options.watchesMax ?? CLIENT_WATCHES_MAX_DEFAULT;
    this.backoffMsMin = options.reconnectBackoffMsMin ?? RECONNECT_BACKOFF_MS_MIN_DEFAULT;
    this.backoffMsMax = options.reconnectBackoffMsMax ?? RECONNECT_BACKOFF_MS_MAX_DEFAULT;
    this.backoffMs = this.backoffMsMin;
    this.connect();
  }

  /** Whether the connection is up right now. */
  isConnected(): boolean {
    return this.connected;
  }

  async grantLease(ttlMs: number): Promise<Lease> {
    checkTtlMs(ttlMs);
    const r = (await this.request({ op: 'grant', ttlMs })) as { leaseId: string; ttlMs: number };
    const id = r.leaseId;
    return {
      id,
      ttlMs: r.ttlMs,
      keepAliveOnce: async () => ((await this.request({ op: 'keepAlive', leaseId: id })) as { ttlMs: number }).ttlMs,
      revoke: async () => void (await this.request({ op: 'revoke', leaseId: id })),
    };
  }

  async get(key: string): Promise<KeyValue | null> {
    checkKey(key);
    const r = (await this.request({ op: 'get', key })) as { kv: WireKeyValue | null };
    return r.kv ? kvFromWire(r.kv) : null;
  }

  async getPrefix(prefix: string): Promise<KeyValue[]> {
    checkPrefix(prefix);
    const r = (await this.request({ op: 'getPrefix', prefix })) as { kvs: WireKeyValue[] };
    return r.kvs.map(kvFromWire);
  }

  async put(key: string, value: Buffer, options: { leaseId?: string } = {}): Promise<number> {
    checkPut(key, value, options);
    const r = (await this.request({ op: 'put', key, value: value.toString('base64'), leaseId: options.leaseId })) as { revision: number };
    return r.revision;
  }

  async compareAndSet(key: string, value: Buffer, options: CasOptions): Promise<CasResult> {
    checkCas(key, value, options);
    return casFromWire(await this.request({ op: 'cas', key, value: value.toString('base64'), expectedModRevision: options.expectedModRevision, leaseId: options.leaseId }));
  }

  async delete(key: string, options: { expectedModRevision?: number } = {}): Promise<CasResult> {
    checkKey(key);
    if (options.expectedModRevision !== undefined) checkRevision(options.expectedModRevision, 'expectedModRevision');
    return casFromWire(await this.request({ op: 'delete', key, expectedModRevision: options.expectedModRevision }));
  }

  async txn(request: TxnRequest): Promise<TxnResult> {
    checkTxn(request);
    const r = (await this.request({ op: 'txn', compares: request.compares, ops: request.ops.map(txnOpToWire) })) as { ok: boolean; revision: number; current: (WireKeyValue | null)[] };
    return { ok: r.ok, revision: r.revision, current: r.current.map((kv) => (kv ? kvFromWire(kv) : null)) };
  }

  async watchPrefix(prefix: string, onEvent: (e: WatchEvent) => void, options: { fromRevision?: number; onError?: (err: Error) => void } = {}): Promise<Watch> {
    checkPrefix(prefix);
    if (options.fromRevision !== undefined) checkRevision(options.fromRevision, 'fromRevision');
    if (this.watches.size >= this.watchesMax) throw new EdgeqError('INVALID_ARGUMENT', `too many watches (watchesMax ${this.watchesMax})`);
    const w: ClientWatch = { id: this.nextId++, prefix, onEvent, onError: options.onError, lastRevision: options.fromRevision ?? -1, keysAtLast: new Set(), active: false, establishing: true, closed: false };
    // Registered before the request: the server may send replayed events before its answer.
    this.watches.set(w.id, w);
    try {
      const r = (await this.request({ op: 'watch', watch: w.id, prefix, fromRevision: options.fromRevision })) as { startRevision: number };
      if (w.lastRevision < 0) w.lastRevision = r.startRevision;
      w.active = true;
    } catch (err) {
      this.watches.delete(w.id);
      throw err;
    } finally {
      w.establishing = false;
    }
    return {
      close: async () => {
        if (w.closed) return;
        w.closed = true;
        this.watches.delete(w.id);
        if (this.connected) await this.request({ op: 'unwatch', watch: w.id }).catch(() => undefined);
      },
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.reconnectTimer?.cancel();
    for (const w of this.watches.values()) w.closed = true;
    this.watches.clear();
    this.failPending(new EdgeqError('ARBITER_UNAVAILABLE', 'arbiter client closed'), true);
    this.socket?.destroy();
  }

  private request(body: Record<string, unknown>): Promise<unknown> {
    if (this.closed) return Promise.reject(new EdgeqError('ARBITER_UNAVAILABLE', 'arbiter client closed'));
    if (this.pending.size >= this.pendingRequestsMax) {
      return Promise.reject(new EdgeqError('ARBITER_UNAVAILABLE', `too many arbiter requests pending (max ${this.pendingRequestsMax})`));
    }
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = this.clock.setTimeout(() => {
        this.pending.delete(id);
        reject(new EdgeqError('ARBITER_UNAVAILABLE', `arbiter did not answer ${String(body['op'])} within ${this.requestTimeoutMs} ms`, { details: { port: this.options.port } }));
      }, this.requestTimeoutMs);
      const p: Pending = { line: `${JSON.stringify({ id, ...body })}\n`, sent: false, timer, resolve, reject };
      this.pending.set(id, p);
      if (this.connected && this.socket) {
        p.sent = true;
        this.socket.write(p.line);
      }
    });
  }

  private connect(): void {
    if (this.closed) return;
    const socket = connect({ host: this.host, port: this.options.port });
    this.socket = socket;
    socket.setNoDelay(true);
    const decoder = new LineDecoder(RESPONSE_BYTES_MAX);
    socket.on('connect', () => {
      this.connected = true;
      this.backoffMs = this.backoffMsMin;
      this.logger.debug({ port: this.options.port }, 'connected to arbiter');
      for (const p of this.pending.values()) {
        if (p.sent) continue;
        p.sent = true;
        socket.write(p.line);
      }
      for (const w of this.watches.values()) if (!w.active && !w.establishing) this.resumeWatch(w);
    });
    socket.on('data', (chunk: Buffer) => {
      try {
        for (const line of decoder.push(chunk)) this.onMessage(JSON.parse(line) as Record<string, unknown>);
      } catch (err) {
        this.logger.warn({ err }, 'bad message from arbiter; reconnecting');
        socket.destroy();
      }
    });
    socket.on('error', (err) => this.logger.debug({ err: err.message }, 'arbiter connection error'));
    socket.on('close', () => {
      if (this.socket !== socket) return;
      this.connected = false;
      this.socket = null;
      for (const w of this.watches.values()) w.active = false;
      // Sent requests may or may not have been applied: only the caller can decide what to do.
      this.failPending(new EdgeqError('ARBITER_UNAVAILABLE', 'connection to the arbiter was lost', { details: { port: this.options.port } }), false);
      if (this.closed) return;
      const delay = this.backoffMs;
      this.backoffMs = Math.min(this.backoffMsMax, this.backoffMs * 2);
      this.reconnectTimer = this.clock.setTimeout(() => this.connect(), delay);
    });
  }

  /** Re-creates a watch after a reconnect from the last revision it delivered. */
  private resumeWatch(w: ClientWatch): void {
    // Start one revision early when part of the last revision was delivered: the rest of it may
    // still be due; the keys already delivered are skipped in onMessage.
    const from = w.keysAtLast.size > 0 ? w.lastRevision - 1 : w.lastRevision;
    w.establishing = true;
    this.request({ op: 'watch', watch: w.id, prefix: w.prefix, fromRevision: from }).then(
      () => {
        w.establishing = false;
        if (!w.closed) w.active = true;
      },
      (err: unknown) => {
        w.establishing = false;
        if (w.closed) return;
        // Lost with the connection again: the next connect retries. Anything else is final.
        if (err instanceof EdgeqError && err.code === 'ARBITER_UNAVAILABLE' && !this.connected) return;
        this.breakWatch(w, err as Error);
      },
    );
  }

  private breakWatch(w: ClientWatch, err: Error): void {
    w.closed = true;
    this.watches.delete(w.id);
    if (!isCompactedError(err)) this.logger.warn({ err, prefix: w.prefix }, 'arbiter watch broken');
    w.onError?.(err);
  }

  private onMessage(msg: Record<string, unknown>): void {
    if (typeof msg['watch'] === 'number') {
      const w = this.watches.get(msg['watch']);
      if (!w || w.closed) return;
      if (msg['error']) {
        // The server dropped this watch (it fell behind): resume it from where it was.
        w.active = false;
        if (this.connected && !w.establishing) this.resumeWatch(w);
        return;
      }
      for (const we of msg['events'] as WireEvent[]) {
        if (we.modRevision < w.lastRevision || (we.modRevision === w.lastRevision && w.keysAtLast.has(we.key))) continue;
        if (we.modRevision > w.lastRevision) {
          w.lastRevision = we.modRevision;
          w.keysAtLast.clear();
        }
        w.keysAtLast.add(we.key);
        try {
          w.onEvent(eventFromWire(we));
        } catch (err) {
          this.logger.error({ err, prefix: w.prefix }, 'watch handler threw');
        }
      }
      return;
    }
    const id = msg['id'];
    if (typeof id !== 'number') return;
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    p.timer.cancel();
    if (msg['ok'] === true) p.resolve(msg['result']);
    else p.reject(errorFromWireMessage(msg['error'] as WireError));
  }

  /** Fails sent requests (and unsent ones too when `all`). */
  private failPending(err: EdgeqError, all: boolean): void {
    for (const [id, p] of this.pending) {
      if (!all && !p.sent) continue;
      this.pending.delete(id);
      p.timer.cancel();
      p.reject(err);
    }
  }
}

function casFromWire(r: unknown): CasResult {
  const x = r as { ok: boolean; revision: number; current: WireKeyValue | null };
  return { ok: x.ok, revision: x.revision, current: x.current ? kvFromWire(x.current) : null };
}
