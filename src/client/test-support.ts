/**
 * Test helpers for the client (not shipped API): a real in-process broker on a temporary folder
 * that can restart on the same folder and port, a tiny frame-speaking TCP server for connection
 * tests, and a proxy that can drop responses to inject faults between a client and a broker.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, createConnection, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Broker } from '../broker/index.ts';
import {
  ApiKey,
  FrameDecoder,
  encodeFrame,
  decodeResponse,
  encodeResponse,
  supportedVersions,
  apiSpec,
  type ApiName,
  type Frame,
  type ResponseOf,
} from '../protocol/index.ts';

const BROKER_TEST_OPTIONS = { group: { initialRebalanceDelayMs: 0, sessionTimeoutMsMin: 100 } };

/** A broker under test that can be stopped and started again on the same folder and port. */
export class TestBroker {
  private constructor(
    readonly dataDir: string,
    public broker: Broker,
  ) {}

  /** Starts a broker on a fresh folder and an ephemeral port. */
  static async start(): Promise<TestBroker> {
    const dataDir = await mkdtemp(join(tmpdir(), 'edgeq-client-'));
    return new TestBroker(dataDir, await Broker.start({ dataDir, ...BROKER_TEST_OPTIONS }));
  }

  /** `host:port` of the broker. */
  get address(): string {
    return `${this.broker.host}:${this.broker.port}`;
  }

  /** Stops the broker (clients see their connections drop). */
  async stopOnly(): Promise<void> {
    await this.broker.close();
  }

  /** Starts a new broker on the same folder and port. */
  async startAgain(): Promise<void> {
    this.broker = await Broker.start({ dataDir: this.dataDir, port: this.broker.port, ...BROKER_TEST_OPTIONS });
  }

  /** Stops the broker and removes its folder. */
  async stop(): Promise<void> {
    await this.broker.close();
    await rm(this.dataDir, { recursive: true, force: true });
  }
}

/** What a fake server does with one request: answer it (now or later) or ignore it. */
export type FakeHandler = (frame: Frame, reply: (body: object) => void, socket: Socket) => void;

/** A TCP server speaking frames, answering ApiVersions itself and everything else via `handler`. */
export class FakeServer {
  readonly sockets = new Set<Socket>();
  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  /** Starts on an ephemeral loopback port; `apis` limits the ApiVersions answer. */
  static async start(handler: FakeHandler, options: { apis?: ApiName[] } = {}): Promise<FakeServer> {
    const sockets = new Set<Socket>();
    const server = createServer((socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => undefined);
      const decoder = new FrameDecoder();
      socket.on('data', (data) => {
        for (const frame of decoder.push(data)) {
          const spec = apiSpec(frame.apiKey)!;
          const reply = (body: object) => {
            if (!socket.destroyed) socket.write(encodeResponse(spec.name, frame.apiVersion, frame.correlationId, body as ResponseOf<typeof spec.name>));
          };
          if (frame.apiKey === ApiKey.ApiVersions) {
            const allowed = options.apis ? new Set(options.apis.map((n) => ApiKey[n] as number)) : null;
            reply({ apis: supportedVersions().filter((a) => a.apiKey === 0 || !allowed || allowed.has(a.apiKey)), brokerId: 7, clusterId: 'fake', frameBytesMax: 0 });
          } else {
            handler({ ...frame, body: Buffer.from(frame.body) }, reply, socket);
          }
        }
      });
    });
    const port = await new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)));
    const fake = new FakeServer(server, port);
    for (const s of sockets) fake.sockets.add(s);
    server.on('connection', (s) => fake.sockets.add(s));
    return fake;
  }

  /** Closes the server and every connection. */
  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

/** Decides, per response frame from the broker, whether the proxy drops it and cuts the client. */
export type DropRule = (apiName: ApiName, frame: Frame) => boolean;

/**
 * A proxy in front of a broker. It rewrites broker addresses in Metadata and FindCoordinator
 * answers to its own, so every connection of the client goes through it, and it cuts the client
 * connection instead of forwarding a response when `dropRule` says so.
 */
export class FaultProxy {
  dropRule: DropRule = () => false;
  readonly dropped: ApiName[] = [];
  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  /** Starts a proxy to `target` on an ephemeral port. */
  static async start(target: { host: string; port: number }): Promise<FaultProxy> {
    let self: FaultProxy | null = null;
    const server = createServer((client) => {
      const upstream = createConnection({ host: target.host, port: target.port });
      client.on('error', () => upstream.destroy());
      upstream.on('error', () => client.destroy());
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
      client.on('data', (d) => upstream.write(d));
      const decoder = new FrameDecoder();
      upstream.on('data', (d) => {
        for (const frame of decoder.push(d)) {
          const name = apiSpec(frame.apiKey)!.name;
          if (self!.dropRule(name, frame)) {
            self!.dropped.push(name);
            client.destroy();
            upstream.destroy();
            return;
          }
          client.write(self!.rewrite(name, frame));
        }
      });
    });
    const port = await new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)));
    self = new FaultProxy(server, port);
    return self;
  }

  /** `host:port` of the proxy. */
  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  private rewrite(name: ApiName, frame: Frame): Buffer {
    if (name === 'Metadata') {
      const body = decodeResponse('Metadata', frame);
      for (const b of body.brokers) b.port = this.port;
      return encodeResponse('Metadata', frame.apiVersion, frame.correlationId, body);
    }
    if (name === 'FindCoordinator') {
      const body = decodeResponse('FindCoordinator', frame);
      if (body.coordinator) body.coordinator.port = this.port;
      return encodeResponse('FindCoordinator', frame.apiVersion, frame.correlationId, body);
    }
    return encodeFrame(frame, frame.body);
  }

  /** Stops accepting connections. */
  async close(): Promise<void> {
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}
