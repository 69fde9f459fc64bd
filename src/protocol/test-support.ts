/**
 * Test helpers for the protocol layer (not shipped API): an in-memory transport that a
 * `Connection` can be given through its `socketFactory`, with a scripted broker on the far side.
 * No TCP, so tests can run on a fake clock. A broker can answer, refuse connections, or be
 * frozen: it accepts the connection (as the kernel does for a SIGSTOPped process) and never
 * answers anything.
 */
import { Duplex } from 'node:stream';
import { EdgeqError } from '../core/index.ts';
import { ApiKey, apiSpec, supportedVersions, type ApiName, type ResponseOf } from './api.ts';
import { encodeResponse } from './codec.ts';
import type { BrokerAddress, SocketFactory, Transport } from './connection.ts';
import { FrameDecoder, type Frame } from './frame.ts';

/** What a scripted broker does with one request (ApiVersions is answered for it): reply now, later, or never. */
export type FakeBrokerHandler = (frame: Frame, reply: (body: object) => void) => void;

/** How a scripted broker behaves. */
export interface FakeBroker {
  /** `answer` (default), `frozen` (accepts, never answers) or `refuse` (connection refused). */
  mode?: 'answer' | 'frozen' | 'refuse';
  /** Broker id it gives in ApiVersions. */
  brokerId?: number;
  /** Requests other than ApiVersions; unset: they are never answered. */
  handler?: FakeBrokerHandler;
}

/** One in-memory connection to a scripted broker. */
class FakeSocket extends Duplex {
  private readonly decoder = new FrameDecoder();
  /** Bytes written while the broker was frozen: it reads them once resumed, as a SIGCONTed process would. */
  private readonly unread: Buffer[] = [];

  constructor(private readonly broker: () => FakeBroker) {
    super();
  }

  override _read(): void {
    // Answers are pushed when the broker replies.
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (err?: Error | null) => void): void {
    if (this.broker().mode === 'frozen') this.unread.push(Buffer.from(chunk));
    else this.serve(chunk);
    done();
  }

  /** The broker reads what it left unread while frozen. */
  readUnread(): void {
    if (this.broker().mode === 'frozen') return;
    for (const chunk of this.unread.splice(0)) this.serve(chunk);
  }

  private serve(chunk: Buffer): void {
    const broker = this.broker();
    for (const frame of this.decoder.push(chunk)) {
      const spec = apiSpec(frame.apiKey)!;
      const copy = { ...frame, body: Buffer.from(frame.body) };
      const reply = (body: object) => {
        if (!this.destroyed && this.broker().mode !== 'frozen') this.push(encodeResponse(spec.name, frame.apiVersion, frame.correlationId, body as ResponseOf<ApiName>));
      };
      if (frame.apiKey === ApiKey.ApiVersions) reply({ apis: supportedVersions(), brokerId: broker.brokerId ?? 0, clusterId: 'fake', frameBytesMax: 0 });
      else broker.handler?.(copy, reply);
    }
  }
}

/**
 * A socket factory over scripted brokers keyed by `host:port`. A broker's behaviour is read on
 * every request, so a test can freeze or thaw it between calls. `opened` counts connections per
 * address.
 */
export class FakeNetwork {
  readonly brokers = new Map<string, FakeBroker>();
  readonly opened = new Map<string, number>();
  readonly sockets: Transport[] = [];
  private readonly byAddress = new Map<string, FakeSocket[]>();

  /** Sets how the broker at `address` (`host:port`) behaves. */
  set(address: string, broker: FakeBroker): void {
    this.brokers.set(address, broker);
  }

  /** After a broker stops being frozen: it reads and answers what was sent to it meanwhile. */
  resume(address: string): void {
    for (const socket of this.byAddress.get(address) ?? []) socket.readUnread();
  }

  /** The factory to give a `Connection` (or a `Cluster`). */
  readonly socketFactory: SocketFactory = (address: BrokerAddress) => {
    const key = `${address.host}:${address.port}`;
    this.opened.set(key, (this.opened.get(key) ?? 0) + 1);
    const socket = new FakeSocket(() => this.brokers.get(key) ?? { mode: 'refuse' });
    this.sockets.push(socket);
    this.byAddress.set(key, [...(this.byAddress.get(key) ?? []), socket]);
    process.nextTick(() => {
      const broker = this.brokers.get(key) ?? { mode: 'refuse' };
      if (broker.mode === 'refuse') socket.destroy(new EdgeqError('CONNECTION_CLOSED', `connect ECONNREFUSED ${key}`));
      else socket.emit('connect');
    });
    return socket;
  };
}

/**
 * Lets stream events already queued run (nextTick, microtasks, immediates), `rounds` times over:
 * a request through a fake socket takes a few turns. Not a wall-clock wait.
 */
export async function settle(rounds = 10): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** Watches a promise without awaiting it: its state now, and its error once rejected. */
export function track<T>(p: Promise<T>): { state: () => 'pending' | 'resolved' | 'rejected'; error: () => unknown } {
  let state: 'pending' | 'resolved' | 'rejected' = 'pending';
  let error: unknown = null;
  p.then(
    () => (state = 'resolved'),
    (e: unknown) => {
      state = 'rejected';
      error = e;
    },
  );
  return { state: () => state, error: () => error };
}
