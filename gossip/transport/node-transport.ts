/**
 * The mesh transport over real sockets: UDP (node:dgram) for datagrams and TCP (node:net) for
 * push-pull, both on the same host and port, as memberlist does. With port 0 it takes a free TCP
 * port and binds UDP to the same number, retrying a bounded number of times if UDP's is taken.
 *
 * Inbound streams are bounded: at most `streamsMax` at once (more are closed on accept), one
 * frame each, `streamIdleMs` to deliver it, and the frame decoder refuses a length over the bound
 * before buffering it.
 *
 * With `tls` (mesh-tls.ts) the TCP side is TLS with mutual authentication: a connection whose
 * handshake fails (a plaintext client, an old protocol version) or whose client certificate is
 * missing or does not verify (another CA, expired) is refused before a byte of its frame is
 * read, counted in `stats.tlsRefused` and reported through `onRefused`; in-progress handshakes
 * count against `streamsMax` (server.maxConnections) and have `streamIdleMs` to finish. The
 * listener follows the material's reloads. UDP is unchanged: datagrams are sealed by the codec
 * (wire/keyring.ts).
 */
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { connect as tlsConnect, createServer as createTlsServer, type TLSSocket } from 'node:tls';
import { EdgeqError } from '../../src/core/index.ts';
import { encodeFrame, FrameDecoder } from '../wire/frames.ts';
import { parseAddress } from '../wire/names.ts';
import { meshTlsClientOptions, meshTlsRefusal, meshTlsServerOptions, type MeshTls } from './mesh-tls.ts';
import type { BoundAddress, MeshTransport, TransportHandlers, TransportStartOptions } from './transport.ts';

/** Inbound push-pull streams open at once. */
export const STREAMS_MAX_DEFAULT = 32;
/** Time an inbound stream has to deliver its frame (a full-state push-pull across a WAN link). */
export const STREAM_IDLE_MS_DEFAULT = 10_000;
/** Tries at binding UDP on the port TCP got when the port is 0. */
export const BIND_ATTEMPTS_MAX = 8;
/** Kernel receive buffer asked for the UDP socket: bursts of gossip must not overflow the default. */
const UDP_RECV_BUFFER_BYTES = 1 << 20;

/** Options of the socket transport. */
export interface NodeTransportOptions {
  /** The interface to bind; 127.0.0.1 in the local deployment. */
  host: string;
  /** 0 picks a free port (the same for UDP and TCP). */
  port: number;
  streamsMax?: number;
  streamIdleMs?: number;
  /** TLS with mutual authentication on the TCP side (push-pull); absent: plain TCP. */
  tls?: MeshTls;
}

/** Counters of what the sockets did outside the agent's view. */
export interface NodeTransportStats {
  sendErrors: number;
  streamsRefused: number;
  streamErrors: number;
  /** Inbound TLS handshakes refused (no or untrusted client certificate, plaintext, a peer check). */
  tlsRefused: number;
}

/** UDP + TCP on one port. */
export class NodeTransport implements MeshTransport {
  private udp: UdpSocket | null = null;
  private server: Server | null = null;
  private readonly open = new Set<Socket>();
  private readonly streamsMax: number;
  private readonly streamIdleMs: number;
  /** The bound on answers to our own exchanges, set by start(). */
  private frameBytesMax = 0;
  private unfollow: (() => void) | null = null;
  readonly stats: NodeTransportStats = { sendErrors: 0, streamsRefused: 0, streamErrors: 0, tlsRefused: 0 };

  constructor(private readonly options: NodeTransportOptions) {
    if (parseAddress(`${options.host.includes(':') ? `[${options.host}]` : options.host}:1`) === null) {
      throw new EdgeqError('INVALID_CONFIG', `bind host "${options.host}" is not a host`, { details: { key: 'bindHost' } });
    }
    if (!Number.isInteger(options.port) || options.port < 0 || options.port > 65535) {
      throw new EdgeqError('INVALID_CONFIG', `bind port ${options.port} is not a port (0-65535)`, { details: { key: 'bindPort' } });
    }
    this.streamsMax = options.streamsMax ?? STREAMS_MAX_DEFAULT;
    this.streamIdleMs = options.streamIdleMs ?? STREAM_IDLE_MS_DEFAULT;
  }

  async start(handlers: TransportHandlers, options: TransportStartOptions): Promise<BoundAddress> {
    const { host } = this.options;
    this.frameBytesMax = options.frameBytesMax;
    let lastErr: unknown = null;
    for (let attempt = 0; attempt < (this.options.port === 0 ? BIND_ATTEMPTS_MAX : 1); attempt++) {
      const server = this.listener(handlers, options.frameBytesMax);
      try {
        const port = await new Promise<number>((resolve, reject) => {
          server.once('error', reject);
          server.listen(this.options.port, host, () => {
            server.off('error', reject);
            const a = server.address();
            resolve(typeof a === 'object' && a ? a.port : 0);
          });
        });
        const udp = createSocket({ type: host.includes(':') ? 'udp6' : 'udp4', recvBufferSize: UDP_RECV_BUFFER_BYTES });
        await new Promise<void>((resolve, reject) => {
          udp.once('error', reject);
          udp.bind(port, host, () => {
            udp.off('error', reject);
            resolve();
          });
        });
        udp.on('message', (msg, rinfo) => handlers.onPacket(msg, `${rinfo.address}:${rinfo.port}`));
        udp.on('error', () => void this.stats.sendErrors++);
        server.on('error', () => void this.stats.streamErrors++);
        this.udp = udp;
        this.server = server;
        const tls = this.options.tls;
        if (tls?.onChange) {
          const tlsServer = server as ReturnType<typeof createTlsServer>;
          // New handshakes get the reloaded certificate; open streams keep theirs.
          this.unfollow = tls.onChange(() => tlsServer.setSecureContext(meshTlsServerOptions(tls, this.streamIdleMs)));
        }
        return { host, port };
      } catch (err) {
        lastErr = err;
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    }
    throw new EdgeqError('INVALID_CONFIG', `cannot bind the mesh on ${host}:${this.options.port}: ${(lastErr as Error)?.message}`, { cause: lastErr, details: { key: 'bindPort' } });
  }

  /** The TCP listener: plain, or TLS with client certificates required. */
  private listener(handlers: TransportHandlers, frameBytesMax: number): Server {
    const tls = this.options.tls;
    if (!tls) return createServer((socket) => this.accept(socket, handlers, frameBytesMax));
    const server = createTlsServer(meshTlsServerOptions(tls, this.streamIdleMs), (socket) => {
      const refusal = meshTlsRefusal(tls, socket);
      if (refusal !== null) return this.refuse(socket, handlers, refusal);
      this.accept(socket, handlers, frameBytesMax);
    });
    // Handshakes in progress hold sockets too: they count against the same bound.
    server.maxConnections = this.streamsMax;
    server.on('drop', () => void this.stats.streamsRefused++);
    server.on('tlsClientError', (err, socket) => this.refuse(socket, handlers, err.message));
    return server;
  }

  private refuse(socket: TLSSocket, handlers: TransportHandlers, reason: string): void {
    this.stats.tlsRefused++;
    handlers.onRefused?.(reason, socket.remoteAddress ? `${socket.remoteAddress}:${socket.remotePort}` : 'a closed connection');
    socket.destroy();
  }

  private accept(socket: Socket, handlers: TransportHandlers, frameBytesMax: number): void {
    if (this.open.size >= this.streamsMax) {
      this.stats.streamsRefused++;
      socket.destroy();
      return;
    }
    this.open.add(socket);
    socket.on('close', () => this.open.delete(socket));
    socket.on('error', () => void this.stats.streamErrors++);
    socket.setTimeout(this.streamIdleMs, () => socket.destroy());
    const from = `${socket.remoteAddress}:${socket.remotePort}`;
    const decoder = new FrameDecoder(frameBytesMax);
    let answered = false;
    socket.on('data', (chunk) => {
      let frames: Buffer[];
      try {
        frames = decoder.push(chunk);
      } catch {
        this.stats.streamErrors++;
        socket.destroy();
        return;
      }
      const frame = frames[0];
      if (frame === undefined || answered) return;
      answered = true;
      socket.pause();
      handlers.onStream(frame, from, (response) => {
        if (response === null || socket.destroyed) {
          socket.destroy();
          return;
        }
        socket.end(encodeFrame(response));
      });
    });
  }

  sendPacket(to: string, bytes: Buffer): void {
    const udp = this.udp;
    const addr = parseAddress(to);
    if (!udp || !addr) {
      this.stats.sendErrors++;
      return;
    }
    udp.send(bytes, addr.port, addr.host, (err) => {
      if (err) this.stats.sendErrors++;
    });
  }

  exchange(to: string, request: Buffer, timeoutMs: number, done: (err: EdgeqError | null, response: Buffer | null) => void): void {
    const addr = parseAddress(to);
    if (!addr || !this.server) {
      done(new EdgeqError('INVALID_ARGUMENT', `not an address: ${to}`), null);
      return;
    }
    let finished = false;
    const tls = this.options.tls;
    const socket: Socket = tls ? tlsConnect({ host: addr.host, port: addr.port, ...meshTlsClientOptions(tls) }) : connect({ host: addr.host, port: addr.port });
    this.open.add(socket);
    const finish = (err: EdgeqError | null, response: Buffer | null): void => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      this.open.delete(socket);
      socket.destroy();
      done(err, response);
    };
    const timer = setTimeout(() => finish(new EdgeqError('TIMEOUT', `push-pull with ${to} took over ${timeoutMs} ms`), null), timeoutMs);
    timer.unref();
    const decoder = new FrameDecoder(this.frameBytesMax);
    // Over TLS the frame goes once the handshake has verified the listener (never before).
    socket.on(tls ? 'secureConnect' : 'connect', () => socket.write(encodeFrame(request)));
    socket.on('data', (chunk) => {
      try {
        const frame = decoder.push(chunk)[0];
        if (frame !== undefined) finish(null, frame);
      } catch (err) {
        finish(err as EdgeqError, null);
      }
    });
    socket.on('error', (err) => finish(new EdgeqError('CONNECTION_CLOSED', `push-pull with ${to}: ${err.message}`, { cause: err }), null));
    socket.on('close', () => finish(new EdgeqError('CONNECTION_CLOSED', `push-pull with ${to}: closed without an answer`), null));
  }

  async stop(): Promise<void> {
    this.unfollow?.();
    this.unfollow = null;
    for (const s of this.open) s.destroy();
    this.open.clear();
    const udp = this.udp;
    const server = this.server;
    this.udp = null;
    this.server = null;
    if (udp) await new Promise<void>((resolve) => udp.close(() => resolve()));
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
