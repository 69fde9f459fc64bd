// Proves the LinkEmulator across three regions: a blackhole cuts only that direction of that pair (the reverse direction and the other links keep carrying UDP and TCP) and lifting it restores traffic; links are listed with settings, counters and routes; bad changes are refused naming the field and change nothing; taken ports, bad routes and bad defaults are typed errors; close frees every port.
import { createSocket } from 'node:dgram';
import { connect, createServer, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { EdgeqError } from '../core/index.ts';
import { LinkEmulator } from './index.ts';

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((o) => o.close()));
});

/** A UDP socket that resolves `next()` with each datagram it receives. */
async function udpEnd() {
  const socket = createSocket('udp4');
  const got: string[] = [];
  let wake: (() => void) | null = null;
  socket.on('message', (d) => {
    got.push(d.toString());
    wake?.();
  });
  await new Promise<void>((r) => socket.bind(0, '127.0.0.1', r));
  open.push({ close: () => new Promise((r) => socket.close(() => r())) });
  return {
    port: socket.address().port,
    got,
    send: (text: string, port: number) => new Promise<void>((r) => socket.send(text, port, '127.0.0.1', () => r())),
    waitFor: (text: string, timeoutMs: number) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`timed out waiting for ${text}; got ${JSON.stringify(got)}`)), timeoutMs);
        const check = (): void => {
          if (got.includes(text)) {
            clearTimeout(timer);
            wake = null;
            resolve();
          }
        };
        wake = check;
        check();
      }),
  };
}

/** A TCP echo server. */
async function echoServer() {
  const server = createServer((s) => {
    s.on('data', (d) => s.write(d));
    s.on('error', () => undefined);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  open.push({ close: () => new Promise((r) => server.close(() => r())) });
  return (server.address() as { port: number }).port;
}

function errorOf(fn: () => unknown): EdgeqError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(EdgeqError);
    return err as EdgeqError;
  }
  throw new Error('expected a throw');
}

describe('LinkEmulator', () => {
  it('cuts only the blackholed direction of one pair, and the lift restores it', async () => {
    const emulator = new LinkEmulator({ defaults: { latencyMs: 5 } });
    open.push(emulator);
    const [a, b, c] = [await udpEnd(), await udpEnd(), await udpEnd()];
    // Each region reaches the others only through its own routes.
    const aToB = await emulator.addRoute('a', 'b', { kind: 'udp', target: `127.0.0.1:${b.port}` });
    const bToA = await emulator.addRoute('b', 'a', { kind: 'udp', target: `127.0.0.1:${a.port}` });
    const aToC = await emulator.addRoute('a', 'c', { kind: 'udp', target: `127.0.0.1:${c.port}` });
    const cToB = await emulator.addRoute('c', 'b', { kind: 'udp', target: `127.0.0.1:${b.port}` });
    const echo = await echoServer();
    const tcpAToB = await emulator.addRoute('a', 'b', { kind: 'tcp', target: `127.0.0.1:${echo}` });
    const tcpAToC = await emulator.addRoute('a', 'c', { kind: 'tcp', target: `127.0.0.1:${echo}` });

    emulator.set('a', 'b', { blackhole: true });
    await a.send('a>b cut', aToB.port);
    await b.send('b>a open', bToA.port);
    await a.send('a>c open', aToC.port);
    await c.send('c>b open', cToB.port);
    await a.waitFor('b>a open', 5_000);
    await c.waitFor('a>c open', 5_000);
    await b.waitFor('c>b open', 5_000);
    await expect.poll(() => emulator.get('a', 'b')!.datagramsDroppedBlackhole, { timeout: 5_000 }).toBe(1);
    expect(b.got).not.toContain('a>b cut');

    // TCP: the a → c route echoes; the a → b route holds what a sends.
    const viaC = connect({ port: tcpAToC.port, host: '127.0.0.1' });
    const viaB = connect({ port: tcpAToB.port, host: '127.0.0.1' });
    const sockets: Socket[] = [viaC, viaB];
    open.push({ close: async () => sockets.forEach((s) => s.destroy()) });
    const echoed = (s: Socket, text: string) => new Promise<void>((r) => s.on('data', (d) => d.toString().includes(text) && r()));
    viaC.write('tcp via c');
    viaB.write('tcp via b');
    await echoed(viaC, 'tcp via c');
    const heldEcho = echoed(viaB, 'tcp via b');
    await expect.poll(() => emulator.get('a', 'b')!.bytesQueued, { timeout: 5_000 }).toBe('tcp via b'.length);

    emulator.set('a', 'b', { blackhole: false });
    await a.send('a>b healed', aToB.port);
    await b.waitFor('a>b healed', 5_000);
    await heldEcho;
    expect(emulator.get('a', 'b')!.datagramsForwarded).toBe(1);
  });

  it('lists links sorted, with settings, counters and routes', async () => {
    const emulator = new LinkEmulator({ defaults: { latencyMs: 30 } });
    open.push(emulator);
    emulator.link('b', 'a');
    const r = await emulator.addRoute('a', 'b', { kind: 'tcp', target: '127.0.0.1:9', listenPort: 0 });
    const links = emulator.links();
    expect(links.map((l) => `${l.from}>${l.to}`)).toEqual(['a>b', 'b>a']);
    expect(links[0]).toMatchObject({
      from: 'a',
      to: 'b',
      latencyMs: 30,
      jitterMs: 0,
      lossRate: 0,
      bandwidthBytesPerSec: 0,
      blackhole: false,
      bytesForwarded: 0,
      datagramsDroppedLoss: 0,
      connectionsOpen: 0,
      routes: [{ kind: 'tcp', host: '127.0.0.1', port: r.port, target: '127.0.0.1:9', connections: 0 }],
    });
    expect(emulator.link('a', 'b')).toEqual(links[0]);
    expect(emulator.get('a', 'c')).toBeUndefined();
    expect(emulator.set('a', 'b', { jitterMs: 4, lossRate: 0.5 })).toMatchObject({ latencyMs: 30, jitterMs: 4, lossRate: 0.5 });
  });

  it('refuses bad changes naming the field, and changes nothing', () => {
    const emulator = new LinkEmulator();
    emulator.link('a', 'b');
    const before = emulator.links();
    const bad: [Record<string, unknown>, string][] = [
      [{ latencyMs: -1 }, 'latencyMs'],
      [{ latencyMs: Number.NaN }, 'latencyMs'],
      [{ jitterMs: 10, lossRate: 2 }, 'lossRate'],
      [{ blackhole: true, bandwidthBytesPerSec: 0.5 }, 'bandwidthBytesPerSec'],
      [{ blackhole: 'yes' }, 'blackhole'],
      [{ latencyMs: 10, speed: 3 }, 'speed'],
    ];
    for (const [change, field] of bad) {
      const e = errorOf(() => emulator.set('a', 'b', change as never));
      expect(e.code).toBe('INVALID_ARGUMENT');
      expect(e.details['field']).toBe(field);
      expect(e.message).toContain(field);
    }
    expect(emulator.links()).toEqual(before);
    expect(errorOf(() => emulator.set('a', 'c', { latencyMs: 1 })).code).toBe('NOT_FOUND');
    expect(errorOf(() => emulator.set('A', 'b', { latencyMs: 1 })).details['field']).toBe('from');
    expect(errorOf(() => emulator.link('a', 'a')).code).toBe('INVALID_ARGUMENT');
    expect(emulator.links()).toEqual(before);
  });

  it('refuses bad routes, a taken port, bad defaults and links beyond the bound with typed errors', async () => {
    const emulator = new LinkEmulator({ limits: { linksMax: 2 } });
    open.push(emulator);
    await expect(emulator.addRoute('a', 'b', { kind: 'sctp' as never, target: '127.0.0.1:1' })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', details: { field: 'kind' } });
    await expect(emulator.addRoute('a', 'b', { kind: 'udp', target: 'nowhere' })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', details: { field: 'target' } });
    await expect(emulator.addRoute('a', 'b', { kind: 'udp', target: '127.0.0.1:1', listenPort: 70_000 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', details: { field: 'listenPort' } });
    const taken = await emulator.addRoute('a', 'b', { kind: 'tcp', target: '127.0.0.1:1' });
    await expect(emulator.addRoute('a', 'b', { kind: 'tcp', target: '127.0.0.1:1', listenPort: taken.port })).rejects.toMatchObject({ code: 'INVALID_CONFIG', details: { key: 'listenPort', port: taken.port } });
    expect(emulator.links()[0]!.routes).toHaveLength(1);
    // a>b and b>a (the TCP route's reverse) fill linksMax.
    expect(errorOf(() => emulator.link('a', 'c')).code).toBe('QUEUE_FULL');
    expect(errorOf(() => new LinkEmulator({ defaults: { latencyMs: -5 } }))).toMatchObject({ code: 'INVALID_CONFIG', details: { key: 'latencyMs' } });
    expect(errorOf(() => new LinkEmulator({ limits: { tcpResumeBytes: 0 } })).code).toBe('INVALID_CONFIG');
  });

  it('frees every port on close and refuses new routes after it', async () => {
    const emulator = new LinkEmulator();
    const udp = await emulator.addRoute('a', 'b', { kind: 'udp', target: '127.0.0.1:1' });
    const tcp = await emulator.addRoute('a', 'b', { kind: 'tcp', target: '127.0.0.1:1' });
    expect(await emulator.removeRoute('a', 'b', 1)).toBe(false);
    await emulator.close();
    const again = new LinkEmulator();
    open.push(again);
    await again.addRoute('a', 'b', { kind: 'udp', target: '127.0.0.1:1', listenPort: udp.port });
    await again.addRoute('a', 'b', { kind: 'tcp', target: '127.0.0.1:1', listenPort: tcp.port });
    await expect(emulator.addRoute('a', 'b', { kind: 'udp', target: '127.0.0.1:1' })).rejects.toMatchObject({ code: 'CONNECTION_CLOSED' });
    expect(await again.removeRoute('a', 'b', tcp.port)).toBe(true);
    expect(again.get('a', 'b')!.routes.map((r) => r.kind)).toEqual(['udp']);
  });
});
