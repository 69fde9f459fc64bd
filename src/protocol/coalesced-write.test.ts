// Proves that writes made in one tick reach the peer in order and leave the socket in one flush (one writev), and that later ticks flush again.
import { createServer, connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { writeCoalesced } from './coalesced-write.ts';

const sockets: Socket[] = [];
afterEach(() => sockets.splice(0).forEach((s) => s.destroy()));

async function pair(): Promise<{ client: Socket; receivedText: (length: number) => Promise<string>; close: () => void }> {
  let text = '';
  const waiters: (() => void)[] = [];
  const server = createServer((s) => {
    sockets.push(s);
    s.on('data', (d) => {
      text += d.toString();
      waiters.splice(0).forEach((w) => w());
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  const client = connect(port, '127.0.0.1');
  sockets.push(client);
  await new Promise<void>((r) => client.once('connect', () => r()));
  const receivedText = async (length: number): Promise<string> => {
    while (text.length < length) await new Promise<void>((r) => waiters.push(r));
    return text;
  };
  return { client, receivedText, close: () => server.close() };
}

describe('writeCoalesced', () => {
  it('flushes the writes of one tick together, in order, and uncorks for the next tick', async () => {
    const { client, receivedText, close } = await pair();
    const writev = client as unknown as { _writev: (chunks: unknown[], cb: () => void) => void };
    const original = writev._writev.bind(client);
    const flushes: number[] = [];
    writev._writev = (chunks, cb) => {
      flushes.push(chunks.length);
      original(chunks, cb);
    };
    for (let i = 0; i < 5; i++) writeCoalesced(client, Buffer.from(`m${i};`));
    expect(client.writableCorked).toBe(1);
    await new Promise((r) => process.nextTick(r));
    expect(client.writableCorked).toBe(0);
    expect(flushes).toEqual([5]);
    let done!: () => void;
    const written = new Promise<void>((r) => (done = r));
    writeCoalesced(client, Buffer.from('m5;'), () => done());
    await written;
    const want = 'm0;m1;m2;m3;m4;m5;';
    expect(await receivedText(want.length)).toBe(want);
    close();
  });
});
