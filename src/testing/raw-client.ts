/**
 * A bare protocol client for tests that need to send exact bytes (bad frames, pipelining, raw
 * requests) without the client library's retries and negotiation in the way.
 */
import { connect, type Socket } from 'node:net';
import { decodeResponse, encodeRequest, FrameDecoder, type ApiName, type Frame, type RequestOf, type ResponseOf } from '../protocol/index.ts';

/** One raw TCP connection to a broker. */
export class RawClient {
  private readonly decoder = new FrameDecoder();
  private readonly frames: Frame[] = [];
  private waiters: (() => void)[] = [];
  private nextId = 1;
  closed = false;
  readonly closedPromise: Promise<void>;

  private constructor(readonly socket: Socket) {
    this.closedPromise = new Promise((resolve) => socket.on('close', () => {
      this.closed = true;
      this.wake();
      resolve();
    }));
    socket.on('data', (chunk: Buffer) => {
      for (const f of this.decoder.push(chunk)) this.frames.push({ ...f, body: Buffer.from(f.body) });
      this.wake();
    });
    socket.on('error', () => undefined);
  }

  static connect(port: number, host = '127.0.0.1'): Promise<RawClient> {
    return new Promise((resolve, reject) => {
      const s = connect({ port, host }, () => {
        s.off('error', reject);
        resolve(new RawClient(s));
      });
      s.once('error', reject);
    });
  }

  /** Writes raw bytes. */
  write(bytes: Buffer): void {
    this.socket.write(bytes);
  }

  /** Sends a request frame; returns its correlation id. */
  send<N extends ApiName>(name: N, body: RequestOf<N>, apiVersion = 1): number {
    const id = this.nextId++;
    this.socket.write(encodeRequest(name, apiVersion, id, body));
    return id;
  }

  /** Sends a request and decodes its response (throws the typed error of an ERROR frame). */
  async call<N extends ApiName>(name: N, body: RequestOf<N>): Promise<ResponseOf<N>> {
    const id = this.send(name, body);
    const f = await this.next();
    if (f.correlationId !== id) throw new Error(`expected correlation id ${id}, got ${f.correlationId}`);
    return decodeResponse(name, f);
  }

  /** The next response frame; rejects if the connection closes first. */
  async next(): Promise<Frame> {
    while (this.frames.length === 0) {
      if (this.closed) throw new Error('connection closed');
      await new Promise<void>((r) => this.waiters.push(r));
    }
    return this.frames.shift()!;
  }

  close(): void {
    this.socket.destroy();
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }
}
