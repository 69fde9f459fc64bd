/**
 * `CellAccess` over real cells: the binary protocol to this region's brokers, and to other
 * regions' brokers through this region's ends of the links (the address map). One `Cluster` per
 * region, made again when the region's published broker list changes.
 *
 * Fetches go to the source's partition leader with the origin filter (`origin`,
 * `after_origin_offset`, `scanned_to`); applies are Produce with acks=all of one batch to the local
 * leader, whose origin guard skips what it holds. A stale-leader answer refreshes the metadata and
 * is thrown, so the replicator's backoff retries it (and reads its cursor back from the new leader).
 *
 * Every (source, partition) fetches, and every partition appends, over its own connection: a
 * broker answers a connection's requests strictly in arrival order, so one replicator's 500 ms
 * long poll on a shared connection would hold back every other partition's fetch behind it (seen:
 * 1 KiB records lagging 830 ms at 200/s while an idle topic long-polled beside them). Metadata,
 * probes and cursor reads share the region's `Cluster`. The connections are bounded by the
 * replicators (two each) and closed when their leader moves or they fail.
 */
import { createConnection } from 'node:net';
import { checkServerIdentity, connect as tlsConnect } from 'node:tls';
import { Cluster, Connection, isStaleMetadataError, type SocketFactory } from '../../src/client/index.ts';
import { EdgeqError, orAborted, type Logger } from '../../src/core/index.ts';
import { errorOf } from '../../src/protocol/codec.ts';
import { Acks, internalClientId, type TlsClientSource } from '../../src/protocol/index.ts';
import type { ApplyResult, CellAccess, LocalOriginState, OriginFetchRequest, OriginFetchResult } from './cell-access.ts';

export interface ClusterCellsOptions {
  /** This region's name and its brokers. */
  region: string;
  localBrokers: string[];
  /** Another region's advertised broker addresses (from its mesh entry); empty when unknown. */
  brokersOf(region: string): string[];
  /** Advertised address → this region's end of the link (identity outside the dev deployment). */
  translate(advertised: string, kind: 'tcp'): string;
  logger: Logger;
  /** Bound on one request beyond a fetch's own wait. */
  requestTimeoutMs: number;
  appendTimeoutMs: number;
  /**
   * TLS to the brokers (this region's and the others'; the region's certificate, which their
   * brokers know as an internal identity) and an API key, when brokers serve TLS or need
   * credentials (docs/security.md). Absent: plaintext, unauthenticated.
   */
  security?: { tls?: TlsClientSource; apiKey?: string };
}

const EMPTY = Buffer.alloc(0);

/** The Fetch version that has the origin filter. */
const FETCH_ORIGIN_VERSION = 2;

/** Numeric wire value of a Produce's acks=all. */
const ACKS_ALL = Acks.ALL;

export class ClusterCells implements CellAccess {
  private readonly remotes = new Map<string, { brokers: string; cluster: Cluster; socketFactory: SocketFactory }>();
  private readonly local: Cluster;
  /** Dedicated connections by `<use>/<region>/<topic>/<partition>`, with the broker they go to. */
  private readonly dedicated = new Map<string, { brokerId: number; conn: Promise<Connection> }>();
  private closed = false;
  /** Per dedicated connection, the send before the next one: a session's fetches go out in order. */
  private readonly sendOrder = new Map<string, Promise<void>>();

  constructor(private readonly o: ClusterCellsOptions) {
    this.local = new Cluster({ brokers: o.localBrokers, clientId: internalClientId(`edgeq-exchange-${o.region}`), logger: o.logger, requestTimeoutMs: o.appendTimeoutMs + o.requestTimeoutMs, ...o.security });
  }

  private remote(region: string): Cluster {
    const brokers = this.o.brokersOf(region);
    if (brokers.length === 0) throw new EdgeqError('BROKER_NOT_AVAILABLE', `no broker address of region ${region} is known yet`, { details: { region } });
    const key = brokers.join(',');
    const have = this.remotes.get(region);
    if (have && have.brokers === key) return have.cluster;
    if (have) void have.cluster.close();
    // Every connection to another region, the metadata's addresses included, goes through the link.
    const tls = this.o.security?.tls;
    const socketFactory: SocketFactory = (a) => {
      const [host, port] = this.o.translate(`${a.host}:${a.port}`, 'tcp').split(':');
      if (!tls) return createConnection({ host: host!, port: Number(port) });
      // Through the link, the certificate is still checked against the advertised broker's name.
      return tlsConnect({ host: host!, port: Number(port), ...tls.clientOptions(), checkServerIdentity: (_name, cert) => checkServerIdentity(a.host, cert) });
    };
    const apiKey = this.o.security?.apiKey;
    const cluster = new Cluster({ brokers, clientId: internalClientId(`edgeq-exchange-${this.o.region}`), logger: this.o.logger, socketFactory, requestTimeoutMs: this.o.requestTimeoutMs, connectTimeoutMs: this.o.requestTimeoutMs, ...(apiKey !== undefined ? { apiKey } : {}) });
    this.remotes.set(region, { brokers: key, cluster, socketFactory });
    return cluster;
  }

  async probe(region: string, signal: AbortSignal): Promise<void> {
    const cluster = this.remote(region);
    const r = await orAborted(cluster.refreshMetadata(), signal);
    if (r === null && signal.aborted) throw new EdgeqError('REQUEST_TIMED_OUT', `region ${region} did not answer`, { details: { region } });
  }

  async fetch(region: string, req: OriginFetchRequest, signal: AbortSignal): Promise<OriginFetchResult> {
    const cluster = region === this.o.region ? this.local : this.remote(region);
    const key = `fetch/${region}/${req.topic}/${req.partition}`;
    // Fetches of a session must reach the broker in the order they were made: each waits for the
    // one before it to be on the wire (the connection keeps the order from there).
    const before = this.sendOrder.get(key) ?? Promise.resolve();
    let sent!: () => void;
    const mine = new Promise<void>((r) => (sent = r));
    const next = before.then(() => mine);
    this.sendOrder.set(key, next);
    void next.then(() => this.sendOrder.get(key) === next && this.sendOrder.delete(key));
    try {
      await before;
      return await this.originFetch(cluster, region, req, signal, key, sent);
    } finally {
      sent();
    }
  }

  private async originFetch(cluster: Cluster, region: string, req: OriginFetchRequest, signal: AbortSignal, own?: string, onSent?: () => void): Promise<OriginFetchResult> {
    const res = await this.withLeader(cluster, req.topic, req.partition, signal, own, (conn) => {
      // Fetch v1 ignores the origin filter and would hand back every batch as the origin's.
      if ((conn.versionOf('Fetch') ?? 0) < FETCH_ORIGIN_VERSION) {
        throw new EdgeqError('UNSUPPORTED_VERSION', `region ${region}'s broker does not speak Fetch v${FETCH_ORIGIN_VERSION} (the origin filter)`, { details: { region } });
      }
      const answer = conn.request(
        'Fetch',
        {
          maxWaitMs: req.maxWaitMs,
          minBytes: 1,
          maxBytes: req.maxBytes,
          topics: [{ name: req.topic, partitions: [{ partition: req.partition, fetchOffset: req.scanFrom, maxBytes: req.maxBytes, origin: req.origin, afterOriginOffset: req.afterOriginOffset, ...(req.session ? { session: req.session } : {}) }] }],
        },
        // A fetch of a session may wait behind the ones before it at the broker.
        { timeoutMs: req.maxWaitMs * (req.session ? 3 : 1) + this.o.requestTimeoutMs },
      );
      onSent?.();
      return answer;
    });
    const p = res.topics[0]?.partitions[0];
    if (!p) throw new EdgeqError('UNKNOWN', `region ${region} answered a fetch without the partition`, { details: { region } });
    const err = errorOf(p.error, { region, topic: req.topic, partition: req.partition, logStartOffset: Number(p.logStartOffset), originDeletedUpTo: p.originDeletedUpTo ?? {} });
    if (err) {
      if (isStaleMetadataError(err)) cluster.markStale(err);
      throw err;
    }
    // An answer with nothing in it may leave the bytes field out.
    const raw = p.records ?? EMPTY;
    // (protobufjs decodes an absent bytes field as an empty array, not a Uint8Array)
    const records = Buffer.isBuffer(raw) ? raw : raw instanceof Uint8Array ? Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength) : Buffer.from(raw as ArrayLike<number>);
    return { records, scannedTo: Number(p.scannedTo), logStartOffset: Number(p.logStartOffset), originCursors: p.originCursors ?? {}, originDeletedUpTo: p.originDeletedUpTo ?? {} };
  }

  async apply(topic: string, partition: number, batch: Buffer, signal: AbortSignal, expectedCursor: number): Promise<ApplyResult> {
    const res = await this.withLeader(this.local, topic, partition, signal, `apply/${topic}/${partition}`, (conn) =>
      conn.request('Produce', { acks: ACKS_ALL, timeoutMs: this.o.appendTimeoutMs, topics: [{ name: topic, partitions: [{ partition, records: batch, originCursorExpected: expectedCursor }] }] }, { timeoutMs: this.o.appendTimeoutMs + this.o.requestTimeoutMs }),
    );
    const p = res.topics[0]?.partitions[0];
    if (!p) throw new EdgeqError('UNKNOWN', 'the local leader answered a produce without the partition');
    const err = errorOf(p.error, { topic, partition });
    if (err) {
      if (isStaleMetadataError(err)) this.local.markStale(err);
      throw err;
    }
    return { duplicate: p.duplicate === true, baseOffset: Number(p.baseOffset) };
  }

  async localState(topic: string, partition: number, signal: AbortSignal): Promise<LocalOriginState> {
    const res = await this.originFetch(this.local, this.o.region, { topic, partition, origin: this.o.region, scanFrom: -1, afterOriginOffset: Number.MAX_SAFE_INTEGER, maxBytes: 1, maxWaitMs: 0 }, signal);
    return { cursors: res.originCursors, deletedUpTo: res.originDeletedUpTo };
  }

  async localCursor(topic: string, partition: number, origin: string, signal: AbortSignal): Promise<number> {
    // A fetch that skips everything (after = the largest offset) and waits for nothing: only the cursors come back.
    const res = await this.originFetch(this.local, this.o.region, { topic, partition, origin, scanFrom: -1, afterOriginOffset: Number.MAX_SAFE_INTEGER, maxBytes: 1, maxWaitMs: 0 }, signal);
    return res.originCursors[origin] ?? -1;
  }

  /**
   * Runs `fn` on a connection to the partition's leader: the cluster's shared one, or with `own`
   * a connection kept for that use alone. A failure that says the leader moved, or that the
   * connection broke, closes the dedicated connection (the next call opens one to the new leader).
   */
  private async withLeader<T>(cluster: Cluster, topic: string, partition: number, signal: AbortSignal, own: string | undefined, fn: (conn: Connection) => Promise<T>): Promise<T> {
    await cluster.ensureFresh([topic]);
    cluster.track([topic]);
    const leader = cluster.leaderOf(topic, partition);
    let conn: Connection;
    try {
      conn = own ? await this.dedicatedTo(cluster, own, leader.leaderId) : await cluster.connectionTo(leader.leaderId, { timeoutMs: this.o.requestTimeoutMs });
    } catch (err) {
      // The leader the metadata names cannot be reached (killed, say): ask for fresh metadata.
      if (isStaleMetadataError(err)) cluster.markStale(err);
      throw err;
    }
    try {
      const r = await orAborted(fn(conn), signal);
      if (r === null) throw new EdgeqError('CONNECTION_CLOSED', 'the exchange stopped this request', { retriable: false });
      return r;
    } catch (err) {
      // A leader that died answers nothing (connection refused, closed, timed out): the cached
      // metadata still names it, so it is marked stale, or every retry would go to it again.
      if (isStaleMetadataError(err)) cluster.markStale(err);
      if (own && (conn.closed || isStaleMetadataError(err) || signal.aborted)) this.dropDedicated(own);
      throw err;
    }
  }

  private async dedicatedTo(cluster: Cluster, key: string, brokerId: number): Promise<Connection> {
    const have = this.dedicated.get(key);
    if (have && have.brokerId === brokerId) {
      const c = await have.conn.catch(() => null);
      if (c && !c.closed) return c;
    }
    this.dropDedicated(key);
    const b = cluster.brokers().find((x) => x.id === brokerId);
    if (!b) throw new EdgeqError('BROKER_NOT_AVAILABLE', `broker ${brokerId} is not in the metadata`, { details: { brokerId } });
    if (this.closed) throw new EdgeqError('CONNECTION_CLOSED', 'the exchange is closing', { retriable: false });
    const socketFactory = [...this.remotes.values()].find((r) => r.cluster === cluster)?.socketFactory;
    const conn = Connection.connect(
      { host: b.host, port: b.port },
      { clientId: internalClientId(`edgeq-exchange-${this.o.region}`), logger: this.o.logger, connectTimeoutMs: this.o.requestTimeoutMs, requestTimeoutMs: this.o.appendTimeoutMs + this.o.requestTimeoutMs, ...this.o.security, ...(socketFactory ? { socketFactory } : {}) },
    );
    this.dedicated.set(key, { brokerId, conn });
    conn.catch(() => this.dedicated.get(key)?.conn === conn && this.dedicated.delete(key));
    return conn;
  }

  release(topic: string, partition: number): void {
    for (const key of [...this.dedicated.keys()]) if (key.endsWith(`/${topic}/${partition}`)) this.dropDedicated(key);
  }

  private dropDedicated(key: string): void {
    const have = this.dedicated.get(key);
    if (!have) return;
    this.dedicated.delete(key);
    void have.conn.then((c) => c.close(), () => undefined);
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const key of [...this.dedicated.keys()]) this.dropDedicated(key);
    await Promise.all([this.local.close(), ...[...this.remotes.values()].map((r) => r.cluster.close())]);
    this.remotes.clear();
  }
}
