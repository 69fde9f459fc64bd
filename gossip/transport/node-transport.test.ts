// Proves the socket transport on 127.0.0.1: UDP and TCP on one port (port 0 picks one for both),
// datagrams delivered, one-frame push-pull exchanges answered, a frame over the bound and a
// dead port answered with typed errors, and bad bind options refused.
import { createConnection } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { EdgeqError, isEdgeqError } from '../../src/core/index.ts';
import { encodeFrame } from '../wire/frames.ts';
import { NodeTransport } from './node-transport.ts';
import type { TransportHandlers } from './transport.ts';

const started: NodeTransport[] = [];
afterEach(async () => {
  for (const t of started.splice(0)) await t.stop();
});

async function start(handlers: Partial<TransportHandlers> = {}, frameBytesMax = 1024): Promise<{ t: NodeTransport; address: string }> {
  const t = new NodeTransport({ host: '127.0.0.1', port: 0 });
  started.push(t);
  const bound = await t.start({ onPacket: handlers.onPacket ?? (() => {}), onStream: handlers.onStream ?? ((_r, _f, reply) => reply(null)) }, { frameBytesMax });
  return { t, address: `127.0.0.1:${bound.port}` };
}

function exchange(t: NodeTransport, to: string, req: Buffer, timeoutMs = 2000): Promise<{ err: EdgeqError | null; res: Buffer | null }> {
  return new Promise((resolve) => t.exchange(to, req, timeoutMs, (err, res) => resolve({ err, res })));
}

describe('NodeTransport', () => {
  it('delivers datagrams between two transports on 127.0.0.1', async () => {
    const got: string[] = [];
    let arrived: () => void = () => {};
    const done = new Promise<void>((r) => (arrived = r));
    const b = await start({
      onPacket: (bytes) => {
        got.push(String(bytes));
        if (got.length === 3) arrived();
      },
    });
    const a = await start();
    for (const s of ['1', '2', '3']) a.t.sendPacket(b.address, Buffer.from(s));
    await done;
    expect(got.sort()).toEqual(['1', '2', '3']);
  });

  it('answers a push-pull exchange with one frame on the same port as UDP', async () => {
    const b = await start({ onStream: (req, _from, reply) => reply(Buffer.concat([Buffer.from('re:'), req])) });
    const a = await start();
    const { err, res } = await exchange(a.t, b.address, Buffer.from('state'));
    expect(err).toBeNull();
    expect(String(res)).toBe('re:state');
  });

  it('closes a stream whose frame is over the bound, and errors on a closed port', async () => {
    let called = 0;
    const b = await start({ onStream: (_req, _from, reply) => (called++, reply(Buffer.from('x'))) }, 16);
    const a = await start({}, 1024);
    const big = await exchange(a.t, b.address, Buffer.alloc(17));
    expect(big.err?.code).toBe('CONNECTION_CLOSED');
    expect(called).toBe(0);
    const closed = new NodeTransport({ host: '127.0.0.1', port: 0 });
    const port = (await closed.start({ onPacket: () => {}, onStream: () => {} }, { frameBytesMax: 16 })).port;
    await closed.stop();
    const refused = await exchange(a.t, `127.0.0.1:${port}`, Buffer.from('x'));
    expect(refused.err?.code).toBe('CONNECTION_CLOSED');
  });

  it('refuses an answer over its own bound', async () => {
    const b = await start({ onStream: (_req, _from, reply) => reply(Buffer.alloc(100)) });
    const a = await start({}, 50);
    const { err } = await exchange(a.t, b.address, Buffer.from('x'));
    expect(err?.code).toBe('FRAME_TOO_LARGE');
  });

  it('times out a stream that never answers', async () => {
    const b = await start({ onStream: () => {} });
    const a = await start();
    const { err } = await exchange(a.t, b.address, Buffer.from('x'), 200);
    expect(err?.code).toBe('TIMEOUT');
  });

  it('reads a frame that arrives in pieces', async () => {
    const got = new Promise<string>((resolve) => void start({ onStream: (req, _f, reply) => (resolve(String(req)), reply(Buffer.from('ok'))) }).then(({ address }) => sendSlowly(address)));
    async function sendSlowly(address: string): Promise<void> {
      const port = Number(address.split(':')[1]);
      const s = createConnection({ host: '127.0.0.1', port });
      await new Promise((r) => s.once('connect', r));
      for (const byte of encodeFrame(Buffer.from('split'))) {
        s.write(Buffer.from([byte]));
        await new Promise((r) => setImmediate(r));
      }
      s.on('data', () => s.destroy());
    }
    expect(await got).toBe('split');
  });

  it('refuses bad bind options with INVALID_CONFIG', () => {
    for (const options of [{ host: 'not a host', port: 0 }, { host: '127.0.0.1', port: 70_000 }, { host: '127.0.0.1', port: 1.5 }]) {
      let caught: unknown;
      try {
        new NodeTransport(options);
      } catch (err) {
        caught = err;
      }
      expect(isEdgeqError(caught, 'INVALID_CONFIG')).toBe(true);
    }
  });
});
