/**
 * Test helpers for the client (not shipped API): a real in-process broker on a temporary folder
 * that can restart on the same folder and port, a tiny frame-speaking TCP server for connection
 * tests, a proxy that can drop responses to inject faults between a client and a broker, and a
 * scripted cell on a fake network whose brokers can be frozen.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, createConnection, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { Broker } from '../broker/index.ts';
import { EdgeqError, type ErrorCode } from '../core/index.ts';
import { createClient, type EdgeqClient } from './client.ts';
import { FakeNetwork, type FakeBrokerHandler } from '../protocol/test-support.ts';
import {
  ApiKey,
  FrameDecoder,
  decodeBody,
  type DescribeConfigsRequest,
  type FetchRequest,
  type ListOffsetsRequest,
  type ProduceRequest,
  encodeFrame,
  decodeResponse,
  encodeResponse,
  supportedVersions,
  apiSpec,
  wireError,
  type ApiName,
  type Frame,
  type ResponseOf,
} from '../protocol/index.ts';

const BROKER_TEST_OPTIONS = { group: { initialRebalanceDelayMs: 0, sessionTimeoutMsMin: 100 } };

/** A broker under test that can be stopped and started again on the same folder and port. */
/**
 * Registers a broker and a client for a test file (started before its tests, stopped after);
 * read them through the returned getters inside tests.
 */
export function useBrokerAndClient(): { readonly tb: TestBroker; readonly client: EdgeqClient } {
  let tb: TestBroker | undefined;
  let client: EdgeqClient | undefined;
  beforeAll(async () => {
    tb = await TestBroker.start();
    client = createClient({ brokers: [tb.address] });
  });
  afterAll(async () => {
    await client?.close();
    await tb?.stop();
  });
  return {
    get tb() {
      return tb!;
    },
    get client() {
      return client!;
    },
  };
}

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

/** One broker of a scripted cell: its id, and whether it is frozen (accepts connections, answers nothing). */
export interface ScriptedBroker {
  id: number;
  frozen?: boolean;
  /** Fetch: answer with no records (default), or never answer. */
  fetch?: 'empty' | 'never';
  /** Produce: answer every partition with this error instead of an offset (a leader that refuses). */
  produceError?: ErrorCode;
}

/**
 * A cell of scripted brokers on a fake network (no processes, no TCP): every broker answers
 * Metadata (the cell's brokers, one topic whose partition p is led by `leaders[p]`), ListOffsets
 * (`highWatermark`), DescribeConfigs, Produce (offset 0) and Fetch as its script says; frozen
 * ones answer nothing.
 * Broker `id` is at `b<id>:<id>`. Flip `frozen` on a broker object to freeze or thaw it.
 */
export function scriptedCell(o: { brokers: ScriptedBroker[]; topic: string; leaders: number[]; highWatermark: number }): FakeNetwork {
  const network = new FakeNetwork();
  const brokers = o.brokers.map((b) => ({ id: b.id, host: `b${b.id}`, port: b.id, region: '' }));
  for (const b of o.brokers) {
    const handler: FakeBrokerHandler = (frame, reply) => {
      const name = apiSpec(frame.apiKey)!.name;
      if (name === 'Metadata') {
        reply({
          brokers,
          controllerId: 1,
          clusterId: 'scripted',
          topics: [{ name: o.topic, internal: false, partitions: o.leaders.map((leaderId, partition) => ({ partition, leaderId, leaderEpoch: 1, replicas: brokers.map((x) => x.id), isr: brokers.map((x) => x.id) })) }],
        });
      } else if (name === 'DescribeConfigs') {
        const req = decodeBody<DescribeConfigsRequest>('DescribeConfigsRequest', frame.body);
        reply({ topics: req.names.map((n) => ({ name: n, partitions: o.leaders.length, replicationFactor: brokers.length, config: {}, internal: false })) });
      } else if (name === 'ListOffsets') {
        const req = decodeBody<ListOffsetsRequest>('ListOffsetsRequest', frame.body);
        reply({ topics: req.topics.map((t) => ({ name: t.name, partitions: t.partitions.map((p) => ({ partition: p.partition, offset: o.highWatermark, leaderEpoch: 1 })) })) });
      } else if (name === 'Produce') {
        const req = decodeBody<ProduceRequest>('ProduceRequest', frame.body);
        const error = b.produceError ? wireError(new EdgeqError(b.produceError, `scripted ${b.produceError}`)) : undefined;
        reply({ topics: req.topics.map((t) => ({ name: t.name, partitions: t.partitions.map((p) => ({ partition: p.partition, baseOffset: error ? -1 : 0, logAppendTimeMs: -1, logStartOffset: 0, leaderEpoch: 1, ...(error ? { error } : {}) })) })) });
      } else if (name === 'Fetch' && b.fetch !== 'never') {
        const req = decodeBody<FetchRequest>('FetchRequest', frame.body);
        reply({
          topics: req.topics.map((t) => ({
            name: t.name,
            partitions: t.partitions.map((p) => ({ partition: p.partition, highWatermark: o.highWatermark, logStartOffset: 0, logEndOffset: o.highWatermark, records: new Uint8Array(0), leaderEpoch: 1 })),
          })),
        });
      }
    };
    const script = { brokerId: b.id, handler, get mode() { return b.frozen ? ('frozen' as const) : ('answer' as const); } };
    network.set(`b${b.id}:${b.id}`, script);
  }
  return network;
}
