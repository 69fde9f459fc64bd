/**
 * The server of the `edgeq arbiter` process: one MemoryArbiter exposed over TCP on 127.0.0.1 with
 * the line protocol of wire.ts, its state saved to `<dataDir>/arbiter.json` before any write is
 * acknowledged or any event forwarded (see SnapshotPersister).
 *
 * Leases belong to the arbiter, not to a connection: a client that disconnects keeps its leases
 * until they expire, so a short network blip does not cost a broker its membership.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { EdgeqError, silentLogger, type Clock, type Logger } from '../../src/core/index.ts';
import type { Watch } from './arbiter.ts';
import { LineDecoder } from './line-decoder.ts';
import { MemoryArbiter, type MemoryArbiterOptions } from './memory-arbiter.ts';
import { readSnapshotFile } from './snapshot.ts';
import { SnapshotPersister } from './snapshot-persister.ts';
import { errorToWire, eventToWire, kvToWire, REQUEST_BYTES_MAX, requestSchema, txnOpFromWire, type WireRequest, type WireServerMessage } from './wire.ts';

/** Concurrent connections: a cell's brokers and controllers, one or two each. */
export const CONNECTIONS_MAX_DEFAULT = 256;
/** Requests of one connection being served at once; more are refused, not queued. */
export const REQUESTS_INFLIGHT_MAX_DEFAULT = 1024;
/** Watches of one connection (a controller watches a handful of prefixes). */
export const WATCHES_PER_CONNECTION_MAX_DEFAULT = 64;
/**
 * Bytes queued for a connection's socket before it is dropped as too slow: a few getPrefix
 * answers; a client that far behind resumes its watches after reconnecting.
 */
export const OUTPUT_BYTES_MAX_DEFAULT = 128 * 1024 * 1024;
/** Name of the state file inside the data folder. */
export const SNAPSHOT_FILE_NAME = 'arbiter.json';

/** Options of an EmbeddedArbiterServer. */
export interface EmbeddedArbiterServerOptions {
  /** Port on 127.0.0.1; 0 picks a free one. */
  port?: number;
  /** Folder of the state file; without it the state lives only in memory. */
  dataDir?: string;
  clock?: Clock;
  logger?: Logger;
  connectionsMax?: number;
  requestsInflightMax?: number;
  watchesPerConnectionMax?: number;
  outputBytesMax?: number;
  /** Limits of the served MemoryArbiter. */
  arbiter?: Omit<MemoryArbiterOptions, 'clock' | 'logger' | 'snapshot' | 'onChange'>;
}

/** The arbiter process's TCP server. */
export class EmbeddedArbiterServer {
  private readonly connections = new Set<Socket>();
  private closing: Promise<void> | null = null;

  private constructor(
    readonly arbiter: MemoryArbiter,
    private readonly server: Server,
    readonly port: number,
    private readonly persister: SnapshotPersister | null,
    private readonly options: Required<Pick<EmbeddedArbiterServerOptions, 'connectionsMax' | 'requestsInflightMax' | 'watchesPerConnectionMax' | 'outputBytesMax'>>,
    private readonly logger: Logger,
  ) {}

  /** Loads the state (if any), then listens on 127.0.0.1. */
  static async start(options: EmbeddedArbiterServerOptions = {}): Promise<EmbeddedArbiterServer> {
    const logger = options.logger ?? silentLogger;
    let persister: SnapshotPersister | null = null;
    let snapshot;
    if (options.dataDir !== undefined) {
      await mkdir(options.dataDir, { recursive: true });
      const file = join(options.dataDir, SNAPSHOT_FILE_NAME);
      snapshot = (await readSnapshotFile(file)) ?? undefined;
      persister = new SnapshotPersister({ file, logger });
    }
    const arbiter = new MemoryArbiter({
      ...options.arbiter,
      ...(options.clock ? { clock: options.clock } : {}),
      logger,
      ...(snapshot ? { snapshot } : {}),
      ...(persister ? { onChange: () => persister.changed() } : {}),
    });
    if (persister) {
      persister.attach(arbiter);
      // Restoring may have dropped keys of lost leases: save that before serving anyone.
      persister.changed();
      await persister.flushed();
    }
    const server = createServer();
    server.maxConnections = options.connectionsMax ?? CONNECTIONS_MAX_DEFAULT;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 0, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    const address = server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    const self = new EmbeddedArbiterServer(
      arbiter,
      server,
      port,
      persister,
      {
        connectionsMax: server.maxConnections,
        requestsInflightMax: options.requestsInflightMax ?? REQUESTS_INFLIGHT_MAX_DEFAULT,
        watchesPerConnectionMax: options.watchesPerConnectionMax ?? WATCHES_PER_CONNECTION_MAX_DEFAULT,
        outputBytesMax: options.outputBytesMax ?? OUTPUT_BYTES_MAX_DEFAULT,
      },
      logger,
    );
    server.on('connection', (socket) => self.serve(socket));
    logger.info({ port, revision: arbiter.currentRevision(), persistent: persister !== null }, 'arbiter listening');
    return self;
  }

  /** Stops listening, drops connections and waits for the last state write. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
      for (const s of this.connections) s.destroy();
      await closed;
      await this.persister?.flushed().catch(() => undefined);
      await this.arbiter.close();
    })();
    return this.closing;
  }

  private serve(socket: Socket): void {
    this.connections.add(socket);
    socket.setNoDelay(true);
    const decoder = new LineDecoder(REQUEST_BYTES_MAX);
    const watches = new Map<number, Watch>();
    let inflight = 0;
    /** Sends leave in order; each waits until the state it reports is on disk. */
    let sendChain: Promise<void> = Promise.resolve();
    const send = (msg: WireServerMessage): void => {
      sendChain = sendChain
        .then(() => this.persister?.flushed())
        .then(
          () => {
            if (socket.destroyed) return;
            socket.write(`${JSON.stringify(msg)}\n`);
            if (socket.writableLength > this.options.outputBytesMax) {
              this.logger.warn({ remote: socket.remotePort }, 'arbiter client too slow; dropping it');
              socket.destroy();
            }
          },
          (err: unknown) => {
            // State cannot be saved: acknowledging anything now could be undone by a crash.
            this.logger.error({ err }, 'dropping connection: state not durable');
            socket.destroy();
          },
        );
    };
    const handle = async (req: WireRequest): Promise<unknown> => {
      const a = this.arbiter;
      switch (req.op) {
        case 'grant': {
          const lease = await a.grantLease(req.ttlMs);
          return { leaseId: lease.id, ttlMs: lease.ttlMs };
        }
        case 'keepAlive':
          return { ttlMs: await a.keepAliveLease(req.leaseId) };
        case 'revoke':
          await a.revokeLease(req.leaseId);
          return {};
        case 'get': {
          const kv = await a.get(req.key);
          return { kv: kv ? kvToWire(kv) : null };
        }
        case 'getPrefix':
          return { kvs: (await a.getPrefix(req.prefix)).map(kvToWire) };
        case 'put':
          return { revision: await a.put(req.key, Buffer.from(req.value, 'base64'), req.leaseId === undefined ? {} : { leaseId: req.leaseId }) };
        case 'cas': {
          const r = await a.compareAndSet(req.key, Buffer.from(req.value, 'base64'), { expectedModRevision: req.expectedModRevision, ...(req.leaseId === undefined ? {} : { leaseId: req.leaseId }) });
          return { ok: r.ok, revision: r.revision, current: r.current ? kvToWire(r.current) : null };
        }
        case 'delete': {
          const r = await a.delete(req.key, req.expectedModRevision === undefined ? {} : { expectedModRevision: req.expectedModRevision });
          return { ok: r.ok, revision: r.revision, current: r.current ? kvToWire(r.current) : null };
        }
        case 'txn': {
          const r = await a.txn({ compares: req.compares, ops: req.ops.map(txnOpFromWire) });
          return { ok: r.ok, revision: r.revision, current: r.current.map((kv) => (kv ? kvToWire(kv) : null)) };
        }
        case 'watch': {
          if (watches.has(req.watch)) throw new EdgeqError('INVALID_ARGUMENT', `watch ${req.watch} already exists on this connection`);
          if (watches.size >= this.options.watchesPerConnectionMax) {
            throw new EdgeqError('INVALID_ARGUMENT', `too many watches on one connection (max ${this.options.watchesPerConnectionMax})`);
          }
          const startRevision = req.fromRevision ?? a.currentRevision();
          const watchId = req.watch;
          const w = await a.watchPrefix(req.prefix, (e) => send({ watch: watchId, events: [eventToWire(e)] }), {
            fromRevision: startRevision,
            onError: (err) => {
              watches.delete(watchId);
              send({ watch: watchId, error: errorToWire(err) });
            },
          });
          watches.set(watchId, w);
          return { startRevision };
        }
        case 'unwatch':
          await watches.get(req.watch)?.close();
          watches.delete(req.watch);
          return {};
      }
    };
    socket.on('data', (chunk: Buffer) => {
      let lines: string[];
      try {
        lines = decoder.push(chunk);
      } catch (err) {
        this.logger.warn({ err }, 'bad arbiter client stream; closing');
        socket.destroy();
        return;
      }
      for (const line of lines) {
        let req: WireRequest;
        try {
          req = requestSchema.parse(JSON.parse(line));
        } catch (err) {
          // Without a valid id there is no one to answer: the stream is not ours.
          this.logger.warn({ err }, 'malformed arbiter request; closing');
          socket.destroy();
          return;
        }
        if (inflight >= this.options.requestsInflightMax) {
          send({ id: req.id, ok: false, error: errorToWire(new EdgeqError('ARBITER_UNAVAILABLE', `too many requests in flight (max ${this.options.requestsInflightMax})`)) });
          continue;
        }
        inflight++;
        handle(req).then(
          (result) => send({ id: req.id, ok: true, result }),
          (err: unknown) => send({ id: req.id, ok: false, error: errorToWire(err) }),
        ).finally(() => inflight--);
      }
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      this.connections.delete(socket);
      for (const w of watches.values()) void w.close();
      watches.clear();
    });
  }
}
