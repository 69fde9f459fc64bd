/**
 * EtcdArbiter: the Arbiter interface over an etcd cluster through the `etcd3` client, for
 * production cells.
 *
 * It speaks etcd's raw KV, Lease and Watch RPCs rather than etcd3's high-level helpers, because
 * those hide what the contract needs: `Lease` keeps itself alive unless told otherwise and its
 * `revoke()` swallows "lease not found"; `put()` does not return revisions. Writes are never
 * retried by the client (etcd3 retries failed calls three times by default): a CAS whose answer
 * was lost and that is sent again would report "failed" for a write that won. Reads and lease
 * renewals are idempotent and are retried.
 *
 * etcd counts lease TTLs in whole seconds: `grantLease(1500)` asks for 2 s, and the server may
 * raise a TTL to its minimum (1.5 × election timeout, rounded up). `Lease.ttlMs` is what etcd
 * granted. The server checks expiry every 500 ms, so keys may outlive their TTL by about that.
 *
 * TLS (`tls`): the client verifies etcd's certificate against `ca` (and its name or IP against the
 * endpoint, as gRPC does) and presents `cert`/`key` when etcd runs with `--client-cert-auth`.
 * Endpoints must then be `https://`; a mix, or `http://` with TLS, is a configuration error, never
 * a silent plaintext link. The PEM bytes are read once (etcd3 builds its gRPC credentials when the
 * client is made): a renewed client certificate takes a restart of the process. The protocol
 * floor is the server's (gRPC's `createSsl` has no minimum-version option; Node and etcd 3.4
 * negotiate TLS 1.3).
 */
import { Etcd3, EtcdLeaseInvalidError, type IKeyValue, type IOptions, type IRequestOp, type Watcher } from 'etcd3';
import { EdgeqError, silentLogger, systemClock, type Clock, type Logger } from '../../src/core/index.ts';
import type { Arbiter, CasOptions, CasResult, KeyValue, Lease, TxnOp, TxnRequest, TxnResult, Watch, WatchEvent } from './arbiter.ts';
import { checkCas, checkKey, checkPrefix, checkPut, checkRevision, checkTtlMs, checkTxn, compactedError } from './validation.ts';

/** Deadline of one etcd call: etcd itself gives up on a proposal after ~7 s without quorum. */
export const ETCD_REQUEST_TIMEOUT_MS_DEFAULT = 5_000;
/** Attempts of an idempotent call (read, lease renewal) before ARBITER_UNAVAILABLE. */
export const ETCD_READ_ATTEMPTS_MAX = 3;
/** Open watches of one EtcdArbiter. */
export const ETCD_WATCHES_MAX_DEFAULT = 256;
/** Largest gRPC message accepted: a getPrefix answer of many keys (etcd's own default is 2 MiB per request). */
export const ETCD_RECEIVE_BYTES_MAX = 64 * 1024 * 1024;

/** etcd's cancel message does not say up to where it compacted. */
const COMPACT_REVISION_UNKNOWN = -1;

/** Options of an EtcdArbiter. */
export interface EtcdArbiterOptions {
  /** etcd client URLs, e.g. `http://127.0.0.1:2379`. */
  hosts: string | string[];
  /** Prefix of every key in etcd, e.g. `edgeq/cell-1/`; keys given and returned are without it. */
  namespace?: string;
  requestTimeoutMs?: number;
  watchesMax?: number;
  clock?: Clock;
  logger?: Logger;
  /** TLS to etcd: PEM bytes of the CA that signed etcd's certificate, and this client's certificate and key for `--client-cert-auth`. */
  tls?: EtcdTlsOptions;
}

/** The PEM material of a TLS link to etcd. */
export interface EtcdTlsOptions {
  ca: Buffer;
  cert?: Buffer;
  key?: Buffer;
}

/** Checks TLS options against the endpoints; the etcd3 credentials, or undefined without TLS. */
function etcdCredentials(hosts: string[], tls: EtcdTlsOptions | undefined): IOptions['credentials'] {
  const bad = (message: string): EdgeqError => new EdgeqError('INVALID_CONFIG', message, { details: { key: 'etcd.tls' } });
  const secure = hosts.filter((h) => h.startsWith('https://')).length;
  if (tls === undefined) {
    if (secure > 0) throw bad('etcd endpoints are https:// but no TLS material (CA) is given');
    return undefined;
  }
  if (secure !== hosts.length) throw bad(`TLS to etcd needs every endpoint to be https:// (got ${hosts.join(', ')})`);
  if (!Buffer.isBuffer(tls.ca) || tls.ca.length === 0) throw bad('TLS to etcd needs the CA that signed etcd\'s certificate');
  if ((tls.cert === undefined) !== (tls.key === undefined)) throw bad('an etcd client certificate needs its key, and a key its certificate');
  return { rootCertificate: tls.ca, ...(tls.cert ? { certChain: tls.cert } : {}), ...(tls.key ? { privateKey: tls.key } : {}) };
}

type FaultHandling = NonNullable<IOptions['faultHandling']>;
type GlobalPolicy = NonNullable<FaultHandling['global']>;

/** A policy that runs a call once: the arbiter decides what may be retried. */
const runOnce = {
  execute: <T>(fn: (context: { signal: AbortSignal }) => PromiseLike<T> | T, signal?: AbortSignal) => Promise.resolve(fn({ signal: signal ?? new AbortController().signal })),
  onSuccess: () => ({ dispose: () => undefined }),
  onFailure: () => ({ dispose: () => undefined }),
} as unknown as GlobalPolicy;

/** The arbiter over etcd. */
export class EtcdArbiter implements Arbiter {
  private readonly client: Etcd3;
  private readonly ns: string;
  private readonly requestTimeoutMs: number;
  private readonly watchesMax: number;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly watchers = new Set<Watcher>();
  private closed = false;

  constructor(options: EtcdArbiterOptions) {
    this.ns = options.namespace ?? '';
    this.requestTimeoutMs = options.requestTimeoutMs ?? ETCD_REQUEST_TIMEOUT_MS_DEFAULT;
    this.watchesMax = options.watchesMax ?? ETCD_WATCHES_MAX_DEFAULT;
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? silentLogger;
    const timeoutMs = this.requestTimeoutMs;
    const credentials = etcdCredentials(typeof options.hosts === 'string' ? [options.hosts] : options.hosts, options.tls);
    this.client = new Etcd3({
      hosts: options.hosts,
      ...(credentials ? { credentials } : {}),
      dialTimeout: timeoutMs,
      // Unary calls get a deadline; streams (watch, keepalive) live as long as they are used.
      defaultCallOptions: (ctx) => (ctx.isStream ? {} : { deadline: Date.now() + timeoutMs }),
      grpcOptions: { 'grpc.max_receive_message_length': ETCD_RECEIVE_BYTES_MAX },
      faultHandling: { global: runOnce },
    });
  }

  async grantLease(ttlMs: number): Promise<Lease> {
    this.checkOpen();
    checkTtlMs(ttlMs);
    const res = await this.call(() => this.client.leaseClient.leaseGrant({ TTL: Math.ceil(ttlMs / 1000), ID: 0 }));
    if (res.error) throw new EdgeqError('ARBITER_UNAVAILABLE', `etcd refused the lease: ${res.error}`);
    const id = res.ID;
    return {
      id,
      ttlMs: Number(res.TTL) * 1000,
      keepAliveOnce: () => this.keepAliveOnce(id),
      revoke: () => this.revoke(id),
    };
  }

  async get(key: string): Promise<KeyValue | null> {
    this.checkOpen();
    checkKey(key);
    const res = await this.retried(() => this.client.kv.range({ key: this.full(key) }));
    const kv = res.kvs[0];
    return kv ? this.toKeyValue(kv) : null;
  }

  async getPrefix(prefix: string): Promise<KeyValue[]> {
    this.checkOpen();
    checkPrefix(prefix);
    const start = this.full(prefix);
    const res = await this.retried(() => this.client.kv.range({ key: start.length === 0 ? Buffer.from([0]) : start, range_end: prefixEnd(start), sort_target: 'Key', sort_order: 'Ascend' }));
    return res.kvs.map((kv) => this.toKeyValue(kv));
  }

  async put(key: string, value: Buffer, options: { leaseId?: string } = {}): Promise<number> {
    this.checkOpen();
    checkPut(key, value, options);
    const res = await this.call(() => this.client.kv.put({ key: this.full(key), value, ...(options.leaseId ? { lease: options.leaseId } : {}) }));
    return Number(res.header.revision);
  }

  async compareAndSet(key: string, value: Buffer, options: CasOptions): Promise<CasResult> {
    this.checkOpen();
    checkCas(key, value, options);
    const k = this.full(key);
    // A missing key compares as mod_revision 0 in etcd, so 0 means "only if absent".
    const res = await this.call(() =>
      this.client.kv.txn({
        compare: [{ key: k, target: 'Mod', result: 'Equal', mod_revision: options.expectedModRevision }],
        success: [{ request_put: { key: k, value, ...(options.leaseId ? { lease: options.leaseId } : {}) } }],
        failure: [{ request_range: { key: k } }],
      }),
    );
    return this.casResult(res.succeeded, Number(res.header.revision), res.responses[0]?.response_range?.kvs[0]);
  }

  async delete(key: string, options: { expectedModRevision?: number } = {}): Promise<CasResult> {
    this.checkOpen();
    checkKey(key);
    const k = this.full(key);
    if (options.expectedModRevision === undefined) {
      const res = await this.call(() => this.client.kv.deleteRange({ key: k }));
      return { ok: true, revision: Number(res.header.revision), current: null };
    }
    checkRevision(options.expectedModRevision, 'expectedModRevision');
    const expected = options.expectedModRevision;
    const res = await this.call(() =>
      this.client.kv.txn({
        compare: [{ key: k, target: 'Mod', result: 'Equal', mod_revision: expected }],
        success: [{ request_delete_range: { key: k } }],
        failure: [{ request_range: { key: k } }],
      }),
    );
    return this.casResult(res.succeeded, Number(res.header.revision), res.responses[0]?.response_range?.kvs[0]);
  }

  async txn(request: TxnRequest): Promise<TxnResult> {
    this.checkOpen();
    // Checked here with the same limits as etcd's defaults, so a refusal is INVALID_ARGUMENT
    // before anything is sent, as from the other arbiters.
    checkTxn(request);
    const res = await this.call(() =>
      this.client.kv.txn({
        // A missing key compares as revision 0 in etcd, for both targets.
        compare: request.compares.map((c) =>
          c.target === 'mod'
            ? { key: this.full(c.key), target: 'Mod' as const, result: 'Equal' as const, mod_revision: c.revision }
            : { key: this.full(c.key), target: 'Create' as const, result: 'Equal' as const, create_revision: c.revision },
        ),
        success: request.ops.map((op) => this.requestOp(op)),
        failure: request.compares.map((c) => ({ request_range: { key: this.full(c.key) } })),
      }),
    );
    const revision = Number(res.header.revision);
    if (res.succeeded) return { ok: true, revision, current: [] };
    return { ok: false, revision, current: res.responses.map((r) => (r.response_range?.kvs[0] ? this.toKeyValue(r.response_range.kvs[0]) : null)) };
  }

  private requestOp(op: TxnOp): IRequestOp {
    if (op.type === 'put') return { request_put: { key: this.full(op.key), value: op.value, ...(op.leaseId ? { lease: op.leaseId } : {}) } };
    if (op.type === 'delete') return { request_delete_range: { key: this.full(op.key) } };
    const start = this.full(op.prefix);
    return { request_delete_range: { key: start, range_end: prefixEnd(start) } };
  }

  async watchPrefix(prefix: string, onEvent: (e: WatchEvent) => void, options: { fromRevision?: number; onError?: (err: Error) => void } = {}): Promise<Watch> {
    this.checkOpen();
    checkPrefix(prefix);
    if (options.fromRevision !== undefined) checkRevision(options.fromRevision, 'fromRevision');
    if (this.watchers.size >= this.watchesMax) throw new EdgeqError('INVALID_ARGUMENT', `too many watches (watchesMax ${this.watchesMax})`);
    const full = this.full(prefix);
    if (options.fromRevision !== undefined) await this.checkNotCompacted(full, options.fromRevision);
    let builder = this.client.watch().prefix(full);
    // etcd's start revision is inclusive; ours is exclusive.
    if (options.fromRevision !== undefined) builder = builder.startRevision(String(options.fromRevision + 1));
    const watcher = builder.watcher();
    let failed = false;
    const fail = (err: Error): void => {
      if (failed) return;
      failed = true;
      this.watchers.delete(watcher);
      void watcher.cancel().catch(() => undefined);
      options.onError?.(err);
    };
    // etcd3 resumes a broken stream after the last response's header revision, and etcd never
    // splits a revision across responses, so events arrive once; this guard only keeps order.
    let lastRevision = 0;
    watcher.on('data', (res) => {
      if (failed) return;
      for (const ev of res.events) {
        const modRevision = Number(ev.kv.mod_revision);
        if (modRevision < lastRevision) continue;
        lastRevision = modRevision;
        try {
          onEvent({ type: ev.type === 'Put' ? 'put' : 'delete', key: this.strip(ev.kv.key), value: ev.type === 'Put' ? Buffer.from(ev.kv.value) : Buffer.alloc(0), modRevision });
        } catch (err) {
          this.logger.error({ err, prefix }, 'watch handler threw');
        }
      }
    });
    watcher.on('disconnected', (err) => this.logger.debug({ err: err.message, prefix }, 'etcd watch disconnected; etcd3 reconnects'));
    watcher.on('error', (err) => {
      const compact = /compact/i.test(err.message);
      fail(compact ? compactedError(options.fromRevision ?? 0, COMPACT_REVISION_UNKNOWN) : new EdgeqError('ARBITER_UNAVAILABLE', `etcd watch broke: ${err.message}`, { cause: err }));
    });
    this.watchers.add(watcher);
    try {
      await this.withDeadline(
        new Promise<void>((resolve, reject) => {
          watcher.once('connected', () => resolve());
          watcher.once('error', reject);
        }),
        'watch',
      );
    } catch (err) {
      this.watchers.delete(watcher);
      failed = true;
      void watcher.cancel().catch(() => undefined);
      throw /compact/i.test((err as Error).message) ? compactedError(options.fromRevision ?? 0, COMPACT_REVISION_UNKNOWN) : toArbiterError(err);
    }
    return {
      close: async () => {
        failed = true;
        this.watchers.delete(watcher);
        await watcher.cancel().catch(() => undefined);
      },
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const w of this.watchers) void w.cancel().catch(() => undefined);
    this.watchers.clear();
    this.client.close();
  }

  /**
   * etcd accepts a watch from a compacted revision and only then cancels it; a read at the first
   * revision wanted fails at once instead, so a too-old watch is refused like the other arbiters
   * refuse it. (A compaction between this read and the watch still reaches `onError`.)
   */
  private async checkNotCompacted(full: Buffer, fromRevision: number): Promise<void> {
    try {
      await this.call(() => this.client.kv.range({ key: full.length === 0 ? Buffer.from([0]) : full, range_end: prefixEnd(full), revision: fromRevision + 1, count_only: true }));
    } catch (err) {
      const message = (err as Error).message;
      if (/compacted/i.test(message)) throw compactedError(fromRevision, COMPACT_REVISION_UNKNOWN);
      // A future revision is fine for a watch: it waits for it.
      if (/future revision/i.test(message)) return;
      throw err;
    }
  }

  private async keepAliveOnce(id: string): Promise<number> {
    this.checkOpen();
    return this.retried(async () => {
      const stream = await this.client.leaseClient.leaseKeepAlive();
      try {
        const res = await this.withDeadline(
          new Promise<{ TTL: string }>((resolve, reject) => {
            stream.on('data', resolve);
            stream.on('error', reject);
            stream.write({ ID: id });
          }),
          'keepAlive',
        );
        // etcd answers a keepalive for an unknown lease with TTL 0 rather than an error.
        if (Number(res.TTL) <= 0) throw new EtcdLeaseInvalidError(id);
        return Number(res.TTL) * 1000;
      } finally {
        stream.end();
      }
    });
  }

  private async revoke(id: string): Promise<void> {
    this.checkOpen();
    await this.call(() => this.client.leaseClient.leaseRevoke({ ID: id }));
  }

  private casResult(ok: boolean, revision: number, current: IKeyValue | undefined): CasResult {
    return { ok, revision, current: !ok && current ? this.toKeyValue(current) : null };
  }

  private toKeyValue(kv: IKeyValue): KeyValue {
    return { key: this.strip(kv.key), value: Buffer.from(kv.value), createRevision: Number(kv.create_revision), modRevision: Number(kv.mod_revision), leaseId: kv.lease || '0' };
  }

  private full(key: string): Buffer {
    return Buffer.from(this.ns + key);
  }

  private strip(key: Buffer): string {
    return key.toString('utf8').slice(this.ns.length);
  }

  private checkOpen(): void {
    if (this.closed) throw new EdgeqError('ARBITER_UNAVAILABLE', 'etcd arbiter is closed');
  }

  /** Runs one etcd call once, mapping its failure. */
  private async call<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      throw toArbiterError(err);
    }
  }

  /** Runs an idempotent call, retrying when etcd was unreachable. */
  private async retried<T>(fn: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn();
      } catch (err) {
        const mapped = toArbiterError(err);
        if (mapped.code !== 'ARBITER_UNAVAILABLE' || attempt >= ETCD_READ_ATTEMPTS_MAX || this.closed) throw mapped;
        this.logger.debug({ err: mapped.message, attempt }, 'retrying etcd read');
      }
    }
  }

  private withDeadline<T>(p: Promise<T>, what: string): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const timer = this.clock.setTimeout(() => reject(new EdgeqError('ARBITER_UNAVAILABLE', `etcd ${what} got no answer within ${this.requestTimeoutMs} ms`)), this.requestTimeoutMs);
      p.then(
        (v) => {
          timer.cancel();
          resolve(v);
        },
        (err: unknown) => {
          timer.cancel();
          reject(err as Error);
        },
      );
    });
  }
}

/** Maps an etcd3 failure to the arbiter's errors. */
function toArbiterError(err: unknown): EdgeqError {
  if (err instanceof EdgeqError) return err;
  if (err instanceof EtcdLeaseInvalidError || /lease not found/i.test((err as Error)?.message ?? '')) {
    return new EdgeqError('LEASE_EXPIRED', (err as Error).message, { cause: err });
  }
  return new EdgeqError('ARBITER_UNAVAILABLE', `etcd: ${(err as Error)?.message ?? String(err)}`, { cause: err });
}

/** The end of etcd's range for a prefix: the prefix with its last non-0xff byte incremented. */
function prefixEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i]! < 0xff) {
      end[i]!++;
      return end.subarray(0, i + 1);
    }
  }
  // Empty or all 0xff: to the end of the keyspace.
  return Buffer.from([0]);
}
